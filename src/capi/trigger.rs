//! `rdma/fi_trigger.h` has no inline functions, so nothing is exported for
//! it; triggered operations are posted with the ordinary data-transfer
//! calls and FI_TRIGGER. This module only checks the header's size rules.

#[cfg(test)]
mod tests {
    use crate::abi::fabric::{fi_context, fi_context2};
    use crate::abi::trigger::{fi_triggered_context, fi_triggered_context2};
    use std::mem::size_of;

    #[test]
    fn triggered_contexts_fit_the_context_they_replace() {
        assert_eq!(size_of::<fi_triggered_context>(), size_of::<fi_context>());
        assert_eq!(size_of::<fi_triggered_context2>(), size_of::<fi_context2>());
    }
}
