//! What a region is made of: access rights, flags, the registration request
//! and the handle a provider keeps for it.

use bitflags::bitflags;

bitflags! {
    /// Access rights of a region (libfabric's `FI_*` values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Access: u64 {
        const COLLECTIVE = 1 << 6;
        const READ = 1 << 8;
        const WRITE = 1 << 9;
        const RECV = 1 << 10;
        const SEND = 1 << 11;
        const REMOTE_READ = 1 << 12;
        const REMOTE_WRITE = 1 << 13;
    }
}

bitflags! {
    /// Per-region options a provider sets from its mr_mode and the
    /// registration flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct RegFlags: u8 {
        /// Target addresses are virtual addresses (`FI_MR_VIRT_ADDR`), not
        /// offsets from 0 across the concatenated iovs.
        const VIRT_ADDR = 1 << 0;
        /// The first successful [`verify`](crate::mr::Registry::verify)
        /// consumes the region (`FI_MR_SINGLE_USE`).
        const SINGLE_USE = 1 << 1;
        /// Created disabled: remote access fails until
        /// [`enable`](crate::mr::Registry::enable) (`FI_MR_RMA_EVENT`,
        /// `FI_MR_ENDPOINT`).
        const DISABLED = 1 << 2;
        /// `enable` needs an endpoint binding first (`FI_MR_ENDPOINT`).
        const NEEDS_EP = 1 << 3;
        /// Remote accesses are counted (`FI_RMA_EVENT`); reported in
        /// [`Target::flags`](crate::mr::Target).
        const RMA_EVENT = 1 << 4;
        /// Persistent memory (`FI_RMA_PMEM`), for the data path.
        const PMEM = 1 << 5;
    }
}

bitflags! {
    /// Bindings recorded on a region before it is enabled.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Bindings: u8 {
        const ENDPOINT = 1 << 0;
        const COUNTER = 1 << 1;
    }
}

/// A registered region, as the provider holds it. Cheap to copy; a stale
/// handle (its region closed) is refused by every call with `Error::INVAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    pub(crate) slot: u32,
    pub(crate) gen: u64,
    pub(crate) key: u64,
}

impl Handle {
    /// The region's 64-bit key (what `fi_mr_key` returns outside FI_MR_RAW).
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The slot index: small, dense, unique among live regions.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The slot's generation: with [`Handle::slot`], all a provider needs
    /// to keep to find the region again ([`Registry::handle_at`]).
    ///
    /// [`Registry::handle_at`]: crate::mr::Registry::handle_at
    pub fn gen(&self) -> u64 {
        self.gen
    }
}

/// A registration request. Build it with [`Request::new`] and set the fields
/// that apply; everything else has the default of `fi_mr_reg`.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// `(address, length)` pairs, at least one, each of nonzero length.
    pub iovs: &'a [(u64, u64)],
    pub access: Access,
    pub flags: RegFlags,
    /// Used only by registries that honour requested keys.
    pub requested_key: u64,
    /// Opaque to the engine; returned by `verify` (e.g. the provider's
    /// `fid_mr` address).
    pub context: u64,
    /// The region's authorization key (see [`Registry::auth_digest`] for
    /// byte keys); `None` accepts any initiator.
    ///
    /// [`Registry::auth_digest`]: crate::mr::Registry::auth_digest
    pub auth: Option<u64>,
    /// Base region of a sub-region (`fi_mr_attr.base_mr`).
    pub parent: Option<Handle>,
    /// `fi_mr_attr.sub_mr_cnt`: sub-regions expected; capacity for that
    /// many is reserved.
    pub sub_mr_cnt: usize,
    /// `fi_hmem_iface` value (0..=15); inherited by sub-regions.
    pub iface: u8,
    /// `fi_mr_attr.page_size` (0 or a power of two); inherited by
    /// sub-regions.
    pub page_size: u64,
}

impl<'a> Request<'a> {
    pub fn new(iovs: &'a [(u64, u64)], access: Access) -> Request<'a> {
        Request {
            iovs,
            access,
            flags: RegFlags::empty(),
            requested_key: 0,
            context: 0,
            auth: None,
            parent: None,
            sub_mr_cnt: 0,
            iface: 0,
            page_size: 0,
        }
    }
}

/// A consistent snapshot of one live region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    pub key: u64,
    pub slot: u32,
    pub access: Access,
    pub flags: RegFlags,
    pub bindings: Bindings,
    pub enabled: bool,
    /// A single-use region that has been used.
    pub consumed: bool,
    pub context: u64,
    /// What `fi_mr_raw_attr` reports as the base address: the first iov's
    /// address with FI_MR_VIRT_ADDR, 0 without.
    pub base_addr: u64,
    /// Bytes registered (sum of the iov lengths; with VIRT_ADDR, of the
    /// merged ranges).
    pub len: u64,
    /// iovs as stored (see [`crate::mr::verify`] for how each addressing
    /// mode keeps them).
    pub iov_count: usize,
    pub parent: Option<u32>,
    /// Live sub-regions of this region.
    pub children: u32,
    pub iface: u8,
    pub page_size: u64,
    pub has_auth: bool,
}
