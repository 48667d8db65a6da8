//! Mirror of `rdma/fi_atomic.h`.
