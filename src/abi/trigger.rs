//! Mirror of `rdma/fi_trigger.h`.
