//! Mirror of `rdma/fi_cm.h`.
