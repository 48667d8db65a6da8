//! Mirror of `rdma/fi_xpu.h`.
