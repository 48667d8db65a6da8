//! Mirror of `rdma/fi_eq.h`.
