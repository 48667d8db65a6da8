//! Mirror of `rdma/fi_endpoint.h`.
