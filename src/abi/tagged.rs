//! Mirror of `rdma/fi_tagged.h`.
