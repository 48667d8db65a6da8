//! Names from fi_getinfo's `node` and `service`, and the host-wide
//! directory that turns a service into the endpoint serving it.
//!
//! Besides an endpoint's own name (`fi_oxshm://<pid>/<ep-id>/<nonce>`, see
//! [`super::ep`]), oxshm takes *host names*:
//!
//! ```text
//! fi_oxshm://<node>:<service>     fi_oxshm://<node>     fi_oxshm://[<ipv6>]:<service>
//! ```
//!
//! which is what fi_getinfo returns for a `node`/`service` pair, and what
//! programs written for sockets pass around (`-s 127.0.0.1`, port 9228).
//!
//! - The node names the host. oxshm reaches this host only, so fi_getinfo
//!   takes a node only if it is "localhost", the host's name, or resolves
//!   to a loopback address or one of the host's own (-FI_ENODATA
//!   otherwise); it is kept in the text, and plays no part in finding an
//!   endpoint.
//! - The service (1 to [`SERVICE_MAX`] of `A-Z a-z 0-9 . _ -`) names an
//!   endpoint on the host, in the namespace of the user:
//!   - an endpoint opened with such a source address (`info->src_addr`,
//!     from fi_getinfo with FI_SOURCE, or `fi_setname`) still gets a fresh
//!     endpoint name, and when it is enabled it *publishes* the service: the
//!     file `/dev/shm/oxshm-svc-<uid>-<service>` holds that endpoint name. It
//!     is created whole (written aside, then hard-linked), so a reader never
//!     sees half of it; the endpoint removes it when it closes. A service
//!     another live endpoint publishes is -FI_EADDRINUSE at fi_enable.
//!   - `fi_av_insert` of a host name with a service *resolves* it to that
//!     endpoint name. A service nobody publishes yet is waited for, up to
//!     `FI_OXSHM_NAME_WAIT` milliseconds (default 5000; peers are often
//!     started a moment apart), then the address fails with
//!     -FI_EADDRNOTAVAIL and a log line.
//!   - An entry whose endpoint's inbox is gone (the endpoint was closed, or
//!     its process died and was reaped) is stale: it is never resolved, and
//!     the next publisher of the service replaces it.
//! - A host name without a service names no endpoint: an endpoint opened
//!   with it as its source gets a fresh name, and inserting it into an AV
//!   fails.

use super::ep::{Address, ADDR_MAX};
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Longest service name.
pub const SERVICE_MAX: usize = 32;

/// Where published services live.
const DIR: &str = "/dev/shm";

/// Default of `FI_OXSHM_NAME_WAIT`, in milliseconds.
const DEFAULT_WAIT_MS: u64 = 5000;

/// What an oxshm address text names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Name {
    /// An endpoint's own name.
    Endpoint(Address),
    /// A host, and an endpoint on it when a service is given.
    Host {
        node: String,
        service: Option<String>,
    },
}

fn check_service(s: &str) -> std::result::Result<(), String> {
    if s.is_empty()
        || s.len() > SERVICE_MAX
        || !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(format!(
            "service \"{}\" is not 1 to {SERVICE_MAX} of A-Z a-z 0-9 . _ -",
            s.escape_debug()
        ));
    }
    Ok(())
}

fn check_node(s: &str) -> std::result::Result<(), String> {
    if s.bytes()
        .any(|b| b == b'/' || b.is_ascii_control() || b == b' ')
    {
        return Err(format!("node \"{}\" is not a host name", s.escape_debug()));
    }
    Ok(())
}

impl Name {
    /// Parses an address text: an endpoint name (it has a '/') or a host
    /// name.
    pub fn parse(s: &str) -> std::result::Result<Name, String> {
        let Some(rest) = s.strip_prefix(Address::PREFIX) else {
            return Err(format!(
                "\"{}\" does not start with {}",
                s.escape_debug(),
                Address::PREFIX
            ));
        };
        if rest.contains('/') {
            return Address::parse(s).map(Name::Endpoint);
        }
        let (node, service) = if let Some(v6) = rest.strip_prefix('[') {
            let Some((node, tail)) = v6.split_once(']') else {
                return Err(format!("\"{}\" has no closing ']'", s.escape_debug()));
            };
            match tail {
                "" => (node, None),
                t => match t.strip_prefix(':') {
                    Some(svc) => (node, Some(svc)),
                    None => {
                        return Err(format!(
                            "\"{}\": ']' is followed by neither ':' nor the end",
                            s.escape_debug()
                        ))
                    }
                },
            }
        } else {
            match rest.rsplit_once(':') {
                Some((node, svc)) => (node, Some(svc)),
                None => (rest, None),
            }
        };
        check_node(node)?;
        if let Some(svc) = service {
            check_service(svc)?;
        } else if node.is_empty() {
            return Err(format!("\"{}\" names no host", s.escape_debug()));
        }
        Ok(Name::Host {
            node: node.to_string(),
            service: service.map(str::to_string),
        })
    }

    /// Parses an address from C bytes: up to the first NUL, or all of them.
    pub fn parse_bytes(b: &[u8]) -> std::result::Result<Name, String> {
        let b = b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n]);
        let s = std::str::from_utf8(b).map_err(|_| "address is not UTF-8 text".to_string())?;
        Name::parse(s)
    }

    /// The address text for fi_getinfo's `node` and `service` (at least one
    /// given). A node that is already an oxshm address, with no service, is
    /// taken as it is.
    pub fn from_node_service(
        node: Option<&str>,
        service: Option<&str>,
    ) -> std::result::Result<String, String> {
        if let (Some(n), None) = (node, service) {
            if n.starts_with(Address::PREFIX) {
                Name::parse(n)?;
                return Ok(n.to_string());
            }
        }
        let node = node.unwrap_or("localhost");
        check_node(node)?;
        if !is_this_host(node) {
            return Err(format!(
                "node {node} is not this host (oxshm reaches endpoints on this host only)"
            ));
        }
        let text = match service {
            Some(svc) => {
                check_service(svc)?;
                if node.contains(':') {
                    format!("{}[{node}]:{svc}", Address::PREFIX)
                } else {
                    format!("{}{node}:{svc}", Address::PREFIX)
                }
            }
            None if node.contains(':') => format!("{}[{node}]", Address::PREFIX),
            None => format!("{}{node}", Address::PREFIX),
        };
        if text.len() >= ADDR_MAX {
            return Err(format!(
                "\"{text}\" is longer than the {} bytes of an oxshm address",
                ADDR_MAX - 1
            ));
        }
        Ok(text)
    }

    /// The service, for a host name that has one.
    pub fn service(&self) -> Option<&str> {
        match self {
            Name::Host { service, .. } => service.as_deref(),
            Name::Endpoint(_) => None,
        }
    }
}

/// Whether `node` names this host: "localhost", the host name, or a name
/// or numeric address that resolves to an address of one of its
/// interfaces (which a socket can be bound to) or to a loopback address.
fn is_this_host(node: &str) -> bool {
    use std::net::{ToSocketAddrs, UdpSocket};
    if node.is_empty() || node.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    if unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        if node.as_bytes().eq_ignore_ascii_case(&buf[..end]) {
            return true;
        }
    }
    let Ok(addrs) = (node, 0u16).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| a.ip().is_loopback() || UdpSocket::bind((a.ip(), 0)).is_ok())
}

/// The source address fi_getinfo reports when the caller gives none: a host
/// name, from which an endpoint takes a fresh name of its own.
pub fn default_source() -> String {
    format!("{}localhost", Address::PREFIX)
}

fn entry(service: &str) -> PathBuf {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    PathBuf::from(format!("{DIR}/oxshm-svc-{uid}-{service}"))
}

/// The endpoint a directory entry names, if it is live: its inbox exists.
fn read_entry(path: &std::path::Path) -> Option<std::result::Result<Address, ()>> {
    let text = std::fs::read(path).ok()?;
    let Ok(a) = Address::parse_bytes(&text) else {
        return Some(Err(()));
    };
    let inbox = format!("{DIR}{}", a.segment_name());
    Some(if std::path::Path::new(&inbox).exists() {
        Ok(a)
    } else {
        Err(())
    })
}

/// A service this process publishes; dropping it withdraws the entry (if
/// it still names this endpoint).
#[derive(Debug)]
pub struct Published {
    service: String,
    addr: Address,
}

impl Drop for Published {
    fn drop(&mut self) {
        let path = entry(&self.service);
        if matches!(read_entry_raw(&path), Some(a) if a == self.addr) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn read_entry_raw(path: &std::path::Path) -> Option<Address> {
    Address::parse_bytes(&std::fs::read(path).ok()?).ok()
}

/// Publishes `service` as the name of the endpoint `addr` (whose inbox
/// exists). -FI_EADDRINUSE when another live endpoint publishes it.
pub fn publish(service: &str, addr: Address) -> Result<Published> {
    static TMP: AtomicU32 = AtomicU32::new(0);
    let path = entry(service);
    let tmp = PathBuf::from(format!(
        "{DIR}/oxshm-svc-tmp-{}-{}",
        std::process::id(),
        TMP.fetch_add(1, Ordering::Relaxed)
    ));
    let fail = |what: &str, e: std::io::Error| {
        crate::ox_log!(
            Warn,
            EpCtrl,
            super::NAME,
            "cannot publish service {service}: {what} {}: {e}",
            tmp.display()
        );
        Error::from_code(e.raw_os_error().unwrap_or(libc::EIO))
    };
    std::fs::write(&tmp, addr.to_string()).map_err(|e| fail("writing", e))?;
    let mut result = Err(Error::ADDRINUSE);
    for _ in 0..2 {
        match std::fs::hard_link(&tmp, &path) {
            Ok(()) => {
                result = Ok(());
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if let Some(Ok(owner)) = read_entry(&path) {
                    crate::ox_log!(
                        Warn,
                        EpCtrl,
                        super::NAME,
                        "service {service} is already published by endpoint {owner}"
                    );
                    break;
                }
                crate::ox_log!(
                    Info,
                    EpCtrl,
                    super::NAME,
                    "replacing the stale entry of service {service}"
                );
                let _ = std::fs::remove_file(&path);
            }
            Err(e) => {
                result = Err(fail("linking", e));
                break;
            }
        }
    }
    let _ = std::fs::remove_file(&tmp);
    result?;
    crate::ox_log!(
        Info,
        EpCtrl,
        super::NAME,
        "endpoint {addr} publishes service {service}"
    );
    Ok(Published {
        service: service.to_string(),
        addr,
    })
}

/// How long [`resolve`] waits for a service to be published.
pub fn wait_limit() -> Duration {
    let ms = std::env::var("FI_OXSHM_NAME_WAIT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_WAIT_MS);
    Duration::from_millis(ms)
}

/// The endpoint that publishes `service`, waiting up to `wait` for one to.
pub fn resolve(service: &str, wait: Duration) -> std::result::Result<Address, String> {
    let path = entry(service);
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(Ok(a)) = read_entry(&path) {
            return Ok(a);
        }
        if start.elapsed() >= wait {
            return Err(format!(
                "no endpoint publishes service {service} (waited {} ms; FI_OXSHM_NAME_WAIT)",
                wait.as_millis()
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Resolves any address text to an endpoint name.
pub fn to_endpoint(name: &Name, wait: Duration) -> std::result::Result<Address, String> {
    match name {
        Name::Endpoint(a) => Ok(*a),
        Name::Host {
            service: Some(svc), ..
        } => resolve(svc, wait),
        Name::Host {
            node,
            service: None,
        } => Err(format!(
            "{}{node} names a host, not an endpoint (give a service, or the endpoint's own name)",
            Address::PREFIX
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_parse() {
        let h = |n: &str, s: Option<&str>| Name::Host {
            node: n.into(),
            service: s.map(Into::into),
        };
        assert_eq!(
            Name::parse("fi_oxshm://127.0.0.1:9228"),
            Ok(h("127.0.0.1", Some("9228")))
        );
        assert_eq!(Name::parse("fi_oxshm://node7"), Ok(h("node7", None)));
        assert_eq!(Name::parse("fi_oxshm://:9228"), Ok(h("", Some("9228"))));
        assert_eq!(Name::parse("fi_oxshm://[::1]:x"), Ok(h("::1", Some("x"))));
        assert_eq!(Name::parse("fi_oxshm://[::1]"), Ok(h("::1", None)));
        assert!(matches!(
            Name::parse("fi_oxshm://1/2/0123456789abcdef"),
            Ok(Name::Endpoint(_))
        ));
        for bad in [
            "fi_oxshm://",
            "fi_oxshm://a:",
            "fi_oxshm://a:b c",
            "fi_oxshm://a:b:c/",
            "fi_oxshm://[::1",
            "fi_oxshm://[::1]x",
            "fi_oxshm://1/2/3",
            "fi_shm://a:1",
            "fi_oxshm://a:0123456789012345678901234567890123",
        ] {
            assert!(Name::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn node_and_service_make_host_names() {
        let f = Name::from_node_service;
        assert_eq!(
            f(Some("127.0.0.1"), Some("9228")).unwrap(),
            "fi_oxshm://127.0.0.1:9228"
        );
        assert_eq!(f(None, Some("9228")).unwrap(), "fi_oxshm://localhost:9228");
        assert_eq!(f(Some("localhost"), None).unwrap(), "fi_oxshm://localhost");
        assert_eq!(f(Some("::1"), Some("7")).unwrap(), "fi_oxshm://[::1]:7");
        let own = "fi_oxshm://1/2/0123456789abcdef";
        assert_eq!(f(Some(own), None).unwrap(), own);
        assert!(f(Some("fi_oxshm://1/2"), None).is_err());
        assert!(f(Some("a/b"), Some("1")).is_err());
        assert!(f(Some("h"), Some("no spaces")).is_err());
        assert!(f(Some(&"n".repeat(60)), Some("1")).is_err());
        // Only this host: loopback, its addresses and its name.
        assert!(f(Some("127.0.0.1"), None).is_ok());
        assert!(f(Some("127.7.7.7"), Some("1")).is_ok());
        assert!(f(Some("192.0.2.1"), Some("1")).is_err());
        assert!(f(Some("g00n13s.invalid"), Some("1")).is_err());
        // Every text made here parses back to the same host and service.
        let t = f(Some("::1"), Some("7")).unwrap();
        assert_eq!(Name::parse(&t).unwrap().service(), Some("7"));
    }

    #[test]
    fn publish_resolve_and_withdraw() {
        let svc = format!("ut-{}", std::process::id());
        // A stale entry (its inbox does not exist) is never resolved and is
        // replaced by the next publisher.
        let ghost = Address {
            pid: std::process::id(),
            ep_id: 4_000_000_001,
            nonce: 7,
        };
        std::fs::write(entry(&svc), ghost.to_string()).unwrap();
        assert!(resolve(&svc, Duration::ZERO).is_err());
        // A live endpoint: its inbox is a file of that name.
        let me = Address {
            pid: std::process::id(),
            ep_id: 4_000_000_002,
            nonce: 8,
        };
        let inbox = format!("{DIR}{}", me.segment_name());
        std::fs::write(&inbox, b"").unwrap();
        let p = publish(&svc, me).unwrap();
        assert_eq!(resolve(&svc, Duration::ZERO), Ok(me));
        assert_eq!(
            to_endpoint(
                &Name::parse(&format!("fi_oxshm://h:{svc}")).unwrap(),
                Duration::ZERO
            ),
            Ok(me)
        );
        // Taken while it lives.
        assert_eq!(publish(&svc, ghost).err(), Some(Error::ADDRINUSE));
        drop(p);
        assert!(!entry(&svc).exists());
        assert!(resolve(&svc, Duration::from_millis(5)).is_err());
        std::fs::remove_file(&inbox).unwrap();
        assert!(to_endpoint(&Name::parse("fi_oxshm://h").unwrap(), Duration::ZERO).is_err());
    }
}
