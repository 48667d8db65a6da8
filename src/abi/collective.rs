//! Mirror of `rdma/fi_collective.h`.
