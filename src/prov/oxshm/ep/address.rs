//! oxshm endpoint addresses: the `fi_oxshm://<pid>/<ep-id>/<nonce>` names
//! (see the parent module for their text), their parsing from C buffers,
//! and the check that an address given to `fi_setname` is this process's.

use super::*;

/// An oxshm endpoint address (see the module documentation for its text).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Address {
    pub pid: u32,
    pub ep_id: u32,
    pub nonce: u64,
}

impl Address {
    /// Scheme prefix of every oxshm address.
    pub const PREFIX: &'static str = "fi_oxshm://";

    /// Parses the canonical text form; the error says what is wrong.
    pub fn parse(s: &str) -> std::result::Result<Address, String> {
        let Some(rest) = s.strip_prefix(Self::PREFIX) else {
            return Err(format!(
                "\"{}\" does not start with {}",
                s.escape_debug(),
                Self::PREFIX
            ));
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let [pid, ep_id, nonce] = parts[..] else {
            return Err(format!(
                "\"{}\" is not {}<pid>/<ep-id>/<nonce>",
                s.escape_debug(),
                Self::PREFIX
            ));
        };
        let pid = decimal(pid, "pid")?;
        if pid == 0 || pid > i32::MAX as u64 {
            return Err(format!("pid {pid} is out of range"));
        }
        let ep_id = decimal(ep_id, "endpoint id")?;
        if ep_id > u32::MAX as u64 {
            return Err(format!("endpoint id {ep_id} is out of range"));
        }
        if nonce.len() != 16
            || !nonce
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(format!(
                "nonce \"{}\" is not 16 lowercase hex digits",
                nonce.escape_debug()
            ));
        }
        let nonce = u64::from_str_radix(nonce, 16).map_err(|e| e.to_string())?;
        Ok(Address {
            pid: pid as u32,
            ep_id: ep_id as u32,
            nonce,
        })
    }

    /// Parses an address from C bytes: up to the first NUL, or all of them.
    pub fn parse_bytes(b: &[u8]) -> std::result::Result<Address, String> {
        let b = b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n]);
        let s = std::str::from_utf8(b).map_err(|_| "address is not UTF-8 text".to_string())?;
        Address::parse(s)
    }

    /// The text form with its NUL, as C receives it.
    pub fn to_cstring(&self) -> CString {
        // The text is digits, letters, ':' and '/': never a NUL.
        CString::new(self.to_string()).unwrap_or_default()
    }

    /// Name of the POSIX shared-memory object the transport maps for this
    /// endpoint (shm_open(3); well under NAME_MAX).
    pub fn segment_name(&self) -> String {
        format!("/oxshm-{}-{}-{:016x}", self.pid, self.ep_id, self.nonce)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}/{}/{:016x}",
            Self::PREFIX,
            self.pid,
            self.ep_id,
            self.nonce
        )
    }
}

/// A canonical decimal field: digits only, no leading zero (except "0").
pub(super) fn decimal(s: &str, what: &str) -> std::result::Result<u64, String> {
    if s.is_empty()
        || s.len() > 10
        || !s.bytes().all(|b| b.is_ascii_digit())
        || (s.len() > 1 && s.starts_with('0'))
    {
        return Err(format!(
            "{what} \"{}\" is not a canonical decimal",
            s.escape_debug()
        ));
    }
    s.parse::<u64>().map_err(|e| e.to_string())
}

/// Reads an address from `len` bytes of C memory: up to the first NUL, at
/// most [`ADDR_MAX`] bytes.
///
/// # Safety
/// `p` points to `len` readable bytes.
pub unsafe fn address_from_c(p: *const c_void, len: usize) -> std::result::Result<Address, String> {
    // SAFETY: per the function contract.
    match unsafe { name_from_c(p, len) }? {
        Name::Endpoint(a) => Ok(a),
        Name::Host { node, service } => Err(format!(
            "host name {node}{}{} is not an endpoint's own name",
            if service.is_some() { ":" } else { "" },
            service.as_deref().unwrap_or("")
        )),
    }
}

/// Reads an address text from `len` bytes of C memory as [`address_from_c`]
/// does, also taking host names (`fi_oxshm://<node>:<service>`).
///
/// # Safety
/// `p` points to `len` readable bytes.
pub unsafe fn name_from_c(p: *const c_void, len: usize) -> std::result::Result<Name, String> {
    if p.is_null() || len == 0 {
        return Err("address is NULL or empty".to_string());
    }
    // SAFETY: p holds len readable bytes (contract); we read at most that.
    let b = unsafe { std::slice::from_raw_parts(p as *const u8, len.min(ADDR_MAX)) };
    if len > ADDR_MAX && !b.contains(&0) {
        return Err(format!("address is longer than {} bytes", ADDR_MAX - 1));
    }
    Name::parse_bytes(b)
}

/// The names of this process's live endpoints, and the source of new ones.
pub(super) mod names {
    use super::*;

    // A B-tree, not a hash set: its nodes are pointed to from their start, so
    // leak checkers see the process-lifetime set as reachable.
    static LIVE: Lazy<Mutex<BTreeSet<Address>>> = Lazy::new(|| Mutex::new(BTreeSet::new()));
    static NEXT_ID: AtomicU32 = AtomicU32::new(1);

    fn live() -> MutexGuard<'static, BTreeSet<Address>> {
        LIVE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new name of this process, registered as live.
    pub fn fresh() -> Address {
        let mut live = live();
        loop {
            let a = Address {
                pid: std::process::id(),
                ep_id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                nonce: crate::prov::oxshm::random_u64(),
            };
            if live.insert(a) {
                return a;
            }
        }
    }

    /// Registers `a` (an address the application chose).
    pub fn claim(a: Address) -> Result<()> {
        if !live().insert(a) {
            crate::ox_log!(
                Warn,
                EpCtrl,
                crate::prov::oxshm::NAME,
                "address {a} is already the name of another endpoint"
            );
            return Err(Error::ADDRINUSE);
        }
        Ok(())
    }

    /// Replaces `old` by `new`; `old` stays if `new` is taken.
    pub fn rename(old: Address, new: Address) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let mut live = live();
        if live.contains(&new) {
            drop(live);
            crate::ox_log!(
                Warn,
                EpCtrl,
                crate::prov::oxshm::NAME,
                "address {new} is already the name of another endpoint"
            );
            return Err(Error::ADDRINUSE);
        }
        live.remove(&old);
        live.insert(new);
        Ok(())
    }

    pub fn release(a: Address) {
        live().remove(&a);
    }
}

/// Checks an address the application wants as an endpoint's name.
pub(super) fn check_own(a: &Address) -> Result<()> {
    let me = std::process::id();
    if a.pid != me {
        crate::ox_log!(
            Warn,
            EpCtrl,
            crate::prov::oxshm::NAME,
            "address {a} belongs to process {}, not to this one ({me})",
            a.pid
        );
        return Err(Error::INVAL);
    }
    Ok(())
}
