//! Mirror of `rdma/fi_errno.h`.
