//! The wire format of ring messages: request and response kinds, their
//! flags, the whole header ([`Wire`]) and the short one ([`Small`]) of
//! the requests that need no more. Plain data: the bytes mean the same in
//! every process of one host.

use super::*;

// Request and response kinds.
pub(super) const K_MSG: u32 = 1;
pub(super) const K_WRITE: u32 = 2;
pub(super) const K_READ: u32 = 3;
pub(super) const K_ATOMIC: u32 = 4;
pub(super) const K_RESP: u32 = 5;
/// Target to initiator: "copy the first `len` bytes yourself, into (out
/// of) these verified pieces of my memory" (a shared bulk copy).
pub(super) const K_GRANT: u32 = 6;
/// Initiator to target: its share of a granted copy is done (`status`).
pub(super) const K_DONE: u32 = 7;
/// A staged piece for the receiver's inbound transfer `addr`, at byte
/// offset `data`, `len` bytes (a write's payload at the target, a
/// message's at the receiver).
pub(super) const K_CHUNK: u32 = 8;
/// A staged piece of a read's result for the initiator's operation `op`,
/// at byte offset `data`.
pub(super) const K_RDATA: u32 = 9;
/// A small message in the short header ([`Small`]): an inline send that
/// waits for no answer and carries no authorization key.
pub(super) const K_SMSG: u32 = 10;
/// A small write in the short header ([`Small`]): an injected write that
/// waits for no answer and carries no authorization key.
pub(super) const K_SWRITE: u32 = 11;

// Wire flags.
pub(super) const W_INLINE: u32 = 1 << 0;
pub(super) const W_TAGGED: u32 = 1 << 1;
pub(super) const W_DATA: u32 = 1 << 2;
/// The initiator of a bulk RMA or message may copy to and from the target
/// itself, so the target may grant it a share of the copy (see
/// [`SPLIT_MIN`]).
pub(super) const W_SPLIT: u32 = 1 << 4;
/// A grant whose bytes the initiator sends as staged pieces ([`K_CHUNK`]).
pub(super) const W_STAGED: u32 = 1 << 5;
/// The last staged piece of a transfer.
pub(super) const W_LAST: u32 = 1 << 6;
/// The initiator completed the operation when the request entered this
/// inbox and waits for no response (see [`Xfer::post`]): an inline message
/// without FI_DELIVERY_COMPLETE, or an fi_inject_write* of an endpoint
/// without a write counter.
pub(super) const W_NOACK: u32 = 1 << 7;

/// The fixed part of every ring message. Plain data: the bytes are the
/// same in every process of one host.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Wire {
    pub(super) kind: u32,
    pub(super) flags: u32,
    pub(super) src_pid: u32,
    pub(super) src_ep: u32,
    pub(super) src_nonce: u64,
    /// The initiator's operation id, echoed by the response.
    pub(super) op: u64,
    pub(super) key: u64,
    pub(super) addr: u64,
    pub(super) len: u64,
    pub(super) data: u64,
    pub(super) tag: u64,
    /// Atomics: datatype, operation, kind (0 base, 1 fetch, 2 compare).
    pub(super) dt: u32,
    pub(super) aop: u32,
    pub(super) akind: u32,
    /// Responses: 0 or a negative FI_E* value.
    pub(super) status: i32,
    /// Remote iovs (addr, len) after the auth bytes, when not inline.
    pub(super) niov: u32,
    pub(super) auth_len: u32,
}

pub(super) const WIRE: usize = std::mem::size_of::<Wire>();
const _: () = assert!(WIRE + AUTH_MAX + INLINE <= CELL_DATA);
const _: () = assert!(WIRE + AUTH_MAX + 2 * ATOMIC_MAX + IOV_MAX * 16 <= CELL_DATA);
/// Payload bytes of one staged piece: a whole ring cell less the header.
pub const CHUNK: usize = CELL_DATA - WIRE;

/// The header of a short request: a small message ([`K_SMSG`]) or a small
/// write ([`K_SWRITE`]), for the inline requests that need no more:
/// acknowledged by nobody ([`W_NOACK`]), without an authorization key, from
/// an endpoint of the process that claims the cell. The kind is the low
/// byte of the first word, the flags the rest of it; the source's pid is
/// the claimer's, from the cell's own header. After it come, for a write,
/// the target key and address, then the tag (with [`W_TAGGED`]) and the
/// remote CQ data (with [`W_DATA`]), 8 bytes each, then the payload. The
/// payload's length is what the cell holds past them (the cell's header
/// has the request's length). With the cell's header, a message of up to
/// 24 bytes (tagged, or with data) or a write of up to 8 bytes with remote
/// CQ data fits the cell's first cache line, which the target reads first
/// anyway to see the request: one line crosses between the CPUs instead of
/// two for [`Wire`]'s 104 bytes, and for 64 bytes two instead of three.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Small {
    pub(super) kind_flags: u32,
    pub(super) src_ep: u32,
    pub(super) src_nonce: u64,
}

pub(super) const SMALL: usize = std::mem::size_of::<Small>();
const _: () = assert!(SMALL == 16);
/// The longest short header (a write with remote CQ data, whose payload
/// follows at once) ends where a padded payload starts.
const _: () = assert!(SMALL + 16 + 8 + 8 <= shm::LINE_AT);
/// The flags of a short header sit above its kind's byte.
const _: () = assert!(W_PAD < 1 << 24);

/// Short-header flag: the payload starts on the cell's second cache line
/// ([`shm::LINE_AT`]), not right after the header (see [`Small::start`]).
pub(super) const W_PAD: u32 = 1 << 8;
/// A grant sent once the target's own share is copied (a stream's): the
/// initiator's operation is complete when its share is copied too, and no
/// answer follows its word ([`K_DONE`]).
pub(super) const W_OWN_DONE: u32 = 1 << 9;

/// What [`Small::parse_msg`] reads of a short message.
pub(super) struct SmallMsg<'a> {
    pub(super) flags: u32,
    pub(super) tag: u64,
    pub(super) data: u64,
    pub(super) src_ep: u32,
    pub(super) src_nonce: u64,
    pub(super) body: &'a [u8],
}

/// Whether a ring message starts with a short header. (A whole header's
/// first word is its kind, below 256, with no bits above.)
#[inline(always)]
pub(super) fn is_small(m: &[u8]) -> bool {
    m.len() >= 4
        && matches!(
            u32::from_ne_bytes([m[0], m[1], m[2], m[3]]) & 0xff,
            K_SMSG | K_SWRITE
        )
}

impl Small {
    /// Bytes of the header of a request of `kind` with its optional fields.
    #[inline(always)]
    pub(super) fn room(kind: u32, flags: u32) -> usize {
        SMALL
            + 16 * (kind == K_SWRITE) as usize
            + 8 * ((flags & W_TAGGED != 0) as usize + (flags & W_DATA != 0) as usize)
    }

    /// The flags (`flags`, with [`W_PAD`] where it applies) and the payload
    /// offset of a short request of `kind` with `len` bytes of payload.
    /// A payload that does not fit the cell's first line with the header
    /// starts on the second line when that takes no more lines: a 64-byte
    /// payload is then one whole line, copied without a load or store that
    /// straddles two (with the payload right after the header, fabtests'
    /// `fi_rma_bw -o writedata` at 64 bytes moved 381 MB/s; on the line,
    /// as the whole header happened to put it, 432).
    ///
    /// A payload too long for the cell (in a spill area, which starts as
    /// far past a line as a cell does) starts on a line always: copied in
    /// and out with `rep movsb`, 4 KiB from a line-aligned buffer to 16
    /// bytes past a line took 2.3 times as long as to a line (in one
    /// process, on the AMD EPYC host of 2026-12-07), and a stream goes
    /// round the same few areas ([`shm`]'s spill areas).
    #[inline(always)]
    pub(super) fn start(kind: u32, flags: u32, len: usize) -> (u32, usize) {
        let room = Small::room(kind, flags);
        let lines = |at: usize| (shm::CELL_HEAD + at + len).div_ceil(64);
        let in_cell = shm::LINE_AT + len <= shm::SMALL_DATA;
        let spilled = room + len > shm::SMALL_DATA && shm::LINE_AT + len <= shm::CELL_DATA;
        if room + len > shm::LINE_AT && ((in_cell && lines(shm::LINE_AT) <= lines(room)) || spilled)
        {
            (flags | W_PAD, shm::LINE_AT)
        } else {
            (flags, room)
        }
    }

    /// Writes the header of a short request from `src` into `cell`: a
    /// write to `target` (key, address) when there is one, a message
    /// otherwise, its optional fields as `flags` says; returns where the
    /// header ends (the payload starts there, or as [`Small::start`] says
    /// with [`W_PAD`]). `src.pid` must be the pid the cell's claim wrote
    /// ([`shm::my_pid`]): the header does not carry it.
    #[inline(always)]
    pub(super) fn write(
        flags: u32,
        src: &Address,
        target: Option<(u64, u64)>,
        tag: u64,
        data: u64,
        cell: &mut [u8],
    ) -> usize {
        let kind = if target.is_some() { K_SWRITE } else { K_SMSG };
        let h = Small {
            kind_flags: kind | flags << 8,
            src_ep: src.ep_id,
            src_nonce: src.nonce,
        };
        // SAFETY: Small is repr(C) plain data of SMALL bytes.
        let b = unsafe { std::slice::from_raw_parts(&h as *const Small as *const u8, SMALL) };
        cell[..SMALL].copy_from_slice(b);
        let mut at = SMALL;
        if let Some((key, addr)) = target {
            cell[at..at + 8].copy_from_slice(&key.to_ne_bytes());
            cell[at + 8..at + 16].copy_from_slice(&addr.to_ne_bytes());
            at += 16;
        }
        if flags & W_TAGGED != 0 {
            cell[at..at + 8].copy_from_slice(&tag.to_ne_bytes());
            at += 8;
        }
        if flags & W_DATA != 0 {
            cell[at..at + 8].copy_from_slice(&data.to_ne_bytes());
            at += 8;
        }
        at
    }

    /// The short header at the start of `m`, its kind and flags, and where
    /// its payload starts; None when `m` is shorter than that.
    #[inline(always)]
    fn header(m: &[u8]) -> Option<(Small, u32, u32, usize)> {
        if m.len() < SMALL {
            return None;
        }
        // SAFETY: m holds SMALL bytes; any bit pattern is a valid Small.
        let h = unsafe { std::ptr::read_unaligned(m.as_ptr() as *const Small) };
        let (kind, flags) = (h.kind_flags & 0xff, h.kind_flags >> 8);
        let room = Small::room(kind, flags);
        let at = if flags & W_PAD != 0 {
            room.max(shm::LINE_AT)
        } else {
            room
        };
        (m.len() >= at).then_some((h, kind, flags, at))
    }

    /// The fields of a short message ([`K_SMSG`], not a write) that a
    /// plain receive needs, and its payload: the header flags (without
    /// [`W_PAD`]), the tag and the remote CQ data (0 where absent), the
    /// sender's endpoint and nonce ([`SmallMsg`]). None for anything
    /// else, or when the message is short. Agrees with [`Small::parse`],
    /// which [`super::Xfer::handle`] falls back on.
    #[inline(always)]
    pub(super) fn parse_msg(m: &[u8]) -> Option<SmallMsg<'_>> {
        let (h, kind, flags, at) = Small::header(m)?;
        if kind != K_SMSG {
            return None;
        }
        let word = |i: usize| u64::from_ne_bytes(m[i..i + 8].try_into().unwrap_or([0; 8]));
        let tagged = flags & W_TAGGED != 0;
        let tag = if tagged { word(SMALL) } else { 0 };
        let data = if flags & W_DATA != 0 {
            word(SMALL + 8 * tagged as usize)
        } else {
            0
        };
        Some(SmallMsg {
            flags: flags & !W_PAD,
            tag,
            data,
            src_ep: h.src_ep,
            src_nonce: h.src_nonce,
            body: &m[at..],
        })
    }

    /// The [`Wire`] of a short request (a [`K_MSG`] or a [`K_WRITE`]) from
    /// a cell claimed by process `pid`, and its payload; None when it is
    /// short.
    pub(super) fn parse(pid: u32, m: &[u8]) -> Option<(Wire, &[u8])> {
        let (h, kind, flags, at) = Small::header(m)?;
        let word = |i: usize| u64::from_ne_bytes(m[i..i + 8].try_into().unwrap_or([0; 8]));
        // The short forms are inline and unanswered, whatever the flags say.
        let mut w = Wire {
            kind: K_MSG,
            flags: (flags & !W_PAD) | W_INLINE | W_NOACK,
            src_pid: pid,
            src_ep: h.src_ep,
            src_nonce: h.src_nonce,
            len: (m.len() - at) as u64,
            ..Default::default()
        };
        let mut f = SMALL;
        if kind == K_SWRITE {
            w.kind = K_WRITE;
            w.key = word(f);
            w.addr = word(f + 8);
            f += 16;
        }
        if flags & W_TAGGED != 0 {
            w.tag = word(f);
            f += 8;
        }
        if flags & W_DATA != 0 {
            w.data = word(f);
        }
        Some((w, &m[at..]))
    }
}

impl Wire {
    pub(super) fn bytes(&self) -> &[u8] {
        // SAFETY: Wire is repr(C) plain data without padding holes that
        // matter (every field is written; the bytes are only copied).
        unsafe { std::slice::from_raw_parts(self as *const Wire as *const u8, WIRE) }
    }

    pub(super) fn parse(m: &[u8]) -> Option<(Wire, &[u8])> {
        if m.len() < WIRE {
            return None;
        }
        // SAFETY: m holds WIRE bytes; any bit pattern is a valid Wire.
        let w = unsafe { std::ptr::read_unaligned(m.as_ptr() as *const Wire) };
        Some((w, &m[WIRE..]))
    }

    pub(super) fn src(&self) -> Address {
        Address {
            pid: self.src_pid,
            ep_id: self.src_ep,
            nonce: self.src_nonce,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_message_header_reads_back_as_the_message_it_was() {
        let src = Address {
            pid: 4242,
            ep_id: 7,
            nonce: 0x1122_3344_5566_7788,
        };
        for (tagged, data) in [(false, false), (true, false), (false, true), (true, true)] {
            let flags = W_INLINE
                | W_NOACK
                | if tagged { W_TAGGED } else { 0 }
                | if data { W_DATA } else { 0 };
            let mut cell = [0xa5u8; 128];
            let at = Small::write(flags, &src, None, 0xdead_beef, 0x0bad_cafe, &mut cell);
            assert_eq!(at, Small::room(K_SMSG, flags));
            cell[at..at + 8].copy_from_slice(b"payload!");
            let (w, body) = Small::parse(src.pid, &cell[..at + 8]).expect("a whole small message");
            assert_eq!((w.kind, w.flags, w.len), (K_MSG, flags, 8));
            assert_eq!((w.key, w.addr), (0, 0));
            assert_eq!(w.src(), src);
            assert_eq!(w.tag, if tagged { 0xdead_beef } else { 0 });
            assert_eq!(w.data, if data { 0x0bad_cafe } else { 0 });
            assert_eq!(body, b"payload!");
            // No payload: a message of length 0.
            let (w, body) = Small::parse(src.pid, &cell[..at]).expect("an empty message");
            assert_eq!((w.len, body.len()), (0, 0));
        }
        // Up to 24 bytes, tagged or with data, the message and the cell's
        // own header share one cache line.
        assert!(shm::CELL_HEAD + Small::room(K_SMSG, W_TAGGED) + 24 <= 64);
        assert!(shm::CELL_HEAD + Small::room(K_SMSG, W_DATA) + 24 <= 64);
    }

    #[test]
    fn a_small_write_header_reads_back_as_the_write_it_was() {
        let src = Address {
            pid: 77,
            ep_id: 3,
            nonce: 0x0102_0304_0506_0708,
        };
        for data in [false, true] {
            // The flags say neither inline nor unanswered: the short form
            // is both whatever they say.
            let flags = if data { W_DATA } else { 0 };
            let mut cell = [0u8; 128];
            let target = Some((0xfeed_0000_0000_0042, 0x7f00_dead_b000));
            let at = Small::write(flags, &src, target, 0, 0x5eed, &mut cell);
            assert_eq!(at, Small::room(K_SWRITE, flags));
            assert!(is_small(&cell[..at]));
            cell[at..at + 5].copy_from_slice(b"bytes");
            let (w, body) = Small::parse(src.pid, &cell[..at + 5]).expect("a whole small write");
            assert_eq!(w.kind, K_WRITE);
            assert_eq!(w.flags, flags | W_INLINE | W_NOACK);
            assert_eq!(
                (w.key, w.addr, w.len),
                (0xfeed_0000_0000_0042, 0x7f00_dead_b000, 5)
            );
            assert_eq!(w.data, if data { 0x5eed } else { 0 });
            assert_eq!((w.tag, w.auth_len, w.niov), (0, 0, 0));
            assert_eq!(w.src(), src);
            assert_eq!(body, b"bytes");
        }
        // An 8-byte write with remote CQ data and the cell's header share
        // one cache line; a 64-byte one takes two.
        assert!(shm::CELL_HEAD + Small::room(K_SWRITE, W_DATA) + 8 <= 64);
        assert!(shm::CELL_HEAD + Small::room(K_SWRITE, W_DATA) + 64 <= 128);
        // A whole header is not short, whatever its kind.
        for kind in [
            K_MSG, K_WRITE, K_READ, K_ATOMIC, K_RESP, K_GRANT, K_DONE, K_CHUNK, K_RDATA,
        ] {
            let w = Wire {
                kind,
                flags: W_INLINE | W_NOACK | W_DATA,
                ..Default::default()
            };
            assert!(!is_small(w.bytes()));
        }
    }

    #[test]
    fn a_payload_that_spills_past_the_first_line_starts_on_the_second() {
        let src = Address {
            pid: 5,
            ep_id: 6,
            nonce: 7,
        };
        let line = |off: usize| (shm::CELL_HEAD + off) / 64;
        for (kind, flags) in [
            (K_SMSG, W_INLINE | W_NOACK),
            (K_SMSG, W_INLINE | W_NOACK | W_TAGGED | W_DATA),
            (K_SWRITE, W_INLINE | W_NOACK),
            (K_SWRITE, W_INLINE | W_NOACK | W_DATA),
        ] {
            for len in [
                0usize, 1, 8, 16, 24, 32, 33, 48, 64, 65, 100, 112, 128, 129, 200, 900, 960, 961,
                968, 976, 992, 1000, 1008, 1009, 2048, 4095, 4096, INLINE,
            ] {
                let (f, at) = Small::start(kind, flags, len);
                let room = Small::room(kind, flags);
                let lines = |at: usize| (shm::CELL_HEAD + at + len).div_ceil(64);
                let spilled = room + len > shm::SMALL_DATA;
                // The padding never moves a message between its cell and
                // a spill area.
                assert_eq!(
                    at + len > shm::SMALL_DATA,
                    spilled,
                    "{kind} {flags:x} {len}"
                );
                assert!(at + len <= shm::CELL_DATA);
                if spilled {
                    // A spilled payload starts on a line.
                    assert!(f & W_PAD != 0, "{kind} {flags:x} {len}");
                } else {
                    // Never more lines than the payload right after the
                    // header.
                    assert!(lines(at) <= lines(room), "{kind} {flags:x} {len}");
                }
                if room + len <= shm::LINE_AT {
                    // All in the first line: no padding.
                    assert_eq!((f, at), (flags, room));
                }
                if f & W_PAD != 0 {
                    assert_eq!(at, shm::LINE_AT);
                    assert_eq!(line(at), 1);
                    assert_eq!((shm::CELL_HEAD + at) % 64, 0);
                } else {
                    assert_eq!((f, at), (flags, room));
                }
                // Written and parsed back: the same request, the padding
                // flag not passed on.
                let mut cell = vec![0x5au8; at + len];
                let target = (kind == K_SWRITE).then_some((11, 12));
                assert_eq!(Small::write(f, &src, target, 13, 14, &mut cell), room);
                for (i, b) in cell[at..].iter_mut().enumerate() {
                    *b = i as u8;
                }
                let (w, body) = Small::parse(src.pid, &cell).expect("a whole request");
                assert_eq!(w.flags, flags, "{kind} {len}");
                assert_eq!(w.len, len as u64);
                assert!(body.iter().enumerate().all(|(i, b)| *b == i as u8));
                // Cut short of its padded start: refused.
                if at > 0 {
                    assert!(Small::parse(src.pid, &cell[..at - 1]).is_none());
                }
            }
        }
        // The 64-byte payloads of fabtests' small benchmarks, each one line.
        assert_eq!(Small::start(K_SWRITE, W_DATA, 64).1, shm::LINE_AT);
        assert_eq!(Small::start(K_SMSG, W_TAGGED, 64).1, shm::LINE_AT);
        assert_eq!(Small::start(K_SMSG, 0, 64).1, shm::LINE_AT);
    }

    #[test]
    fn a_small_message_shorter_than_its_header_says_is_refused() {
        let src = Address {
            pid: 1,
            ep_id: 2,
            nonce: 3,
        };
        let mut cell = [0u8; 64];
        let at = Small::write(W_INLINE | W_TAGGED | W_DATA, &src, None, 1, 2, &mut cell);
        assert!(Small::parse(src.pid, &cell[..at]).is_some());
        assert!(Small::parse(src.pid, &cell[..at - 1]).is_none());
        assert!(Small::parse(src.pid, &cell[..SMALL - 1]).is_none());
        let at = Small::write(W_DATA, &src, Some((1, 2)), 0, 3, &mut cell);
        assert!(Small::parse(src.pid, &cell[..at]).is_some());
        assert!(Small::parse(src.pid, &cell[..at - 1]).is_none());
    }

    /// The receiver's short read of a small message ([`Small::parse_msg`])
    /// finds what the whole parse finds, for every optional field, padded
    /// or not, at every length up to a spilled payload; it refuses what
    /// the whole parse refuses, and writes, which it leaves to that parse.
    #[test]
    fn the_short_read_of_a_small_message_agrees_with_the_whole_parse() {
        let src = Address {
            pid: 31,
            ep_id: 9,
            nonce: 0xfeed_f00d_0123_4567,
        };
        let mut cell = vec![0x5au8; shm::LINE_AT + 4096];
        for (tagged, data) in [(false, false), (true, false), (false, true), (true, true)] {
            let flags = W_INLINE
                | W_NOACK
                | if tagged { W_TAGGED } else { 0 }
                | if data { W_DATA } else { 0 };
            for len in [0usize, 1, 8, 24, 25, 40, 64, 200, 1000, 4096] {
                let (flags, at) = Small::start(K_SMSG, flags, len);
                Small::write(flags, &src, None, 0x7a6, 0xda7a, &mut cell);
                for (i, b) in cell[at..at + len].iter_mut().enumerate() {
                    *b = i as u8;
                }
                let m = &cell[..at + len];
                let (w, body) = Small::parse(src.pid, m).expect("a whole message");
                let q = Small::parse_msg(m).expect("a short message");
                assert_eq!(q.flags | W_INLINE | W_NOACK, w.flags, "{flags:#x} {len}");
                assert_eq!((q.tag, q.data), (w.tag, w.data));
                assert_eq!((q.src_ep, q.src_nonce), (w.src_ep, w.src_nonce));
                assert_eq!(q.body, body);
                assert_eq!(q.body.len(), len);
                // One byte short of its header: both refuse it.
                if at > 0 && len == 0 {
                    assert!(Small::parse(src.pid, &cell[..at - 1]).is_none());
                    assert!(Small::parse_msg(&cell[..at - 1]).is_none());
                }
            }
        }
        assert!(Small::parse_msg(&cell[..SMALL - 1]).is_none());
        let at = Small::write(0, &src, Some((1, 2)), 0, 0, &mut cell);
        assert!(Small::parse(src.pid, &cell[..at]).is_some());
        assert!(Small::parse_msg(&cell[..at]).is_none(), "a write");
    }
}
