//! Mirror of `rdma/fi_ext.h`.
