//! Mirror of `rdma/fi_rma.h`.
