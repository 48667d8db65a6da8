//! The receive queues: posted receives (and the pieces of multi-receive
//! buffers they hand out), messages that arrived before their receive,
//! and the buffer lists both carry.

use super::wire::{Wire, W_TAGGED};
use super::{lock, Address, IOV_MAX};
use libc::c_void;
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ptr::addr_of_mut;
use std::sync::{Arc, Mutex};

/// The local buffers of one operation or posted receive: up to
/// [`IOV_MAX`] kept in place (no allocation per operation), more on the
/// heap.
#[derive(Clone)]
pub(super) enum IovList {
    /// The count, then the pieces. A `u32` count shares its word with the
    /// tag: the list takes 72 bytes, not 80 (see [`Recv`]).
    Inline(u32, [(u64, u64); IOV_MAX]),
    Heap(Vec<(u64, u64)>),
}

impl Default for IovList {
    #[inline]
    fn default() -> IovList {
        IovList::Inline(0, [(0, 0); IOV_MAX])
    }
}

impl From<&[(u64, u64)]> for IovList {
    #[inline]
    fn from(v: &[(u64, u64)]) -> IovList {
        if v.len() <= IOV_MAX {
            let mut a = [(0, 0); IOV_MAX];
            a[..v.len()].copy_from_slice(v);
            return IovList::Inline(v.len() as u32, a);
        }
        IovList::Heap(v.to_vec())
    }
}

impl IovList {
    /// Appends a piece; the fifth moves the list to the heap.
    #[inline]
    pub(super) fn push(&mut self, p: (u64, u64)) {
        match self {
            IovList::Inline(n, a) if (*n as usize) < IOV_MAX => {
                a[*n as usize] = p;
                *n += 1;
            }
            IovList::Inline(n, a) => {
                let mut v = a[..*n as usize].to_vec();
                v.push(p);
                *self = IovList::Heap(v);
            }
            IovList::Heap(v) => v.push(p),
        }
    }
}

impl std::ops::Deref for IovList {
    type Target = [(u64, u64)];
    #[inline]
    fn deref(&self) -> &[(u64, u64)] {
        match self {
            IovList::Inline(n, a) => &a[..*n as usize],
            IovList::Heap(v) => v,
        }
    }
}

/// A posted receive, or the piece of a multi-receive buffer that one
/// message fills.
///
/// 128 bytes: the receive is copied into the queue when posted and out of
/// it when a message takes it, and up to 128 bytes the compiler copies in
/// place, with eight 16-byte loads and stores, where at 144 (the source as
/// an `Option<Address>`, the count as a `usize`) it called `memcpy` for
/// each copy.
#[derive(Clone)]
pub(super) struct Recv {
    pub(super) tagged: bool,
    pub(super) tag: u64,
    pub(super) ignore: u64,
    /// Messages from any source are taken, not only from `src`.
    pub(super) any_src: bool,
    pub(super) src: Address,
    pub(super) iov: IovList,
    pub(super) report: bool,
    pub(super) context: *mut c_void,
    /// FI_MULTI_RECV: the buffer this receive is, or is a piece of.
    pub(super) multi: Option<Arc<Multi>>,
}

const _: () = assert!(std::mem::size_of::<Recv>() <= 128);

impl Recv {
    /// Takes messages from `src`, or from any source for None.
    #[inline(always)]
    pub(super) fn set_source(&mut self, src: Option<Address>) {
        self.any_src = src.is_none();
        if let Some(a) = src {
            self.src = a;
        }
    }

    /// No address: the source of a receive from any.
    pub(super) const NO_SRC: Address = Address {
        pid: 0,
        ep_id: 0,
        nonce: 0,
    };

    /// A receive with nothing in it yet, the base that
    /// [`super::Xfer::recv_of`] fills in.
    pub(super) const VACANT: Recv = Recv {
        tagged: false,
        tag: 0,
        ignore: 0,
        any_src: true,
        src: Recv::NO_SRC,
        iov: IovList::Inline(0, [(0, 0); IOV_MAX]),
        report: false,
        context: std::ptr::null_mut(),
        multi: None,
    };
}

/// A multi-receive buffer (fi_msg(3) FI_MULTI_RECV), shared by the posted
/// buffer and the pieces it has handed out. Messages are packed one after
/// the other, without alignment. The buffer is released when less than
/// `min` bytes remain (a full buffer is always released), when a message
/// does not fit in what remains of a buffer that already took one, or
/// when it is cancelled; its last completion carries FI_MULTI_RECV: that
/// of the last piece to finish, or one of its own (len 0, no other flag)
/// when no piece is outstanding at the release.
pub(super) struct Multi {
    /// FI_OPT_MIN_MULTI_RECV when the buffer was posted.
    pub(super) min: u64,
    pub(super) state: Mutex<MultiState>,
}

#[derive(Default, Debug, PartialEq)]
pub(super) struct MultiState {
    /// Bytes handed out.
    pub(super) used: u64,
    /// Pieces handed out and not completed.
    pub(super) pieces: usize,
    pub(super) released: bool,
}

/// What a multi-receive buffer does with a message of some length.
#[derive(Debug, PartialEq)]
pub(super) enum Carve {
    /// Bytes `[off, off + len)` of the buffer take the message (a message
    /// larger than `len` is truncated); `released`: this was the buffer's
    /// last piece.
    Piece { off: u64, len: u64, released: bool },
    /// The message does not fit: the buffer is released without it.
    Full,
}

impl Multi {
    pub(super) fn new(min: usize) -> Multi {
        Multi {
            min: min as u64,
            state: Mutex::new(MultiState::default()),
        }
    }

    /// Hands out the next piece of a buffer of `room` bytes for a message
    /// of `len` bytes. Only a fresh buffer truncates a message (else it
    /// could never be received); a used one that is too small is released.
    pub(super) fn carve(&self, room: u64, len: u64) -> Carve {
        let mut s = lock(&self.state);
        let left = room - s.used;
        if len > left && s.used > 0 {
            s.released = true;
            return Carve::Full;
        }
        let off = s.used;
        let take = len.min(left);
        s.used += take;
        s.pieces += 1;
        s.released = room - s.used < self.min.max(1);
        Carve::Piece {
            off,
            len: take,
            released: s.released,
        }
    }

    /// Records that a piece completed; true when it is the buffer's last
    /// completion (the buffer is released and nothing else is out).
    pub(super) fn piece_done(&self) -> bool {
        let mut s = lock(&self.state);
        s.pieces = s.pieces.saturating_sub(1);
        s.released && s.pieces == 0
    }

    /// Releases the buffer (cancelled or full); true when no piece is out,
    /// so the release needs a completion of its own.
    pub(super) fn release(&self) -> bool {
        let mut s = lock(&self.state);
        s.released = true;
        s.pieces == 0
    }
}

/// A message that arrived before its receive.
pub(super) struct Unexpected {
    pub(super) w: Wire,
    /// Inline payload, or the sender's iovs (pulled when matched).
    pub(super) bytes: Vec<u8>,
    pub(super) remote: Pieces,
    /// FI_PEEK | FI_CLAIM: the context that claimed it and the token
    /// written into that context; only an FI_CLAIM receive with the same
    /// context takes it.
    pub(super) claim: Option<(usize, u64)>,
}

#[derive(Default)]
pub(super) struct Rx {
    pub(super) posted: Posted,
    pub(super) unexpected: VecDeque<Unexpected>,
}

/// The posted receives, oldest first: a ring of slots, each receive
/// written straight into its slot and dropped where it lies when a
/// message takes it.
///
/// A `VecDeque` took a receive by value: posting one copied a blank
/// receive into the queue (out of line) and then filled it in, and taking
/// one copied its 128 bytes out again before dropping them. Here a post
/// writes the fields once, and the common take ([`Posted::discard_front`])
/// copies nothing.
#[derive(Default)]
pub(super) struct Posted {
    /// A power of two slots (none until the first post); the live ones
    /// are `len` of them from `head` on, wrapping around.
    slots: Vec<MaybeUninit<Recv>>,
    head: usize,
    len: usize,
}

impl Posted {
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot of the `i`th receive (live or about to be).
    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        (self.head + i) & (self.slots.len() - 1)
    }

    #[inline(always)]
    pub(super) fn front(&self) -> Option<&Recv> {
        self.get(0)
    }

    #[inline(always)]
    pub(super) fn get(&self, i: usize) -> Option<&Recv> {
        if i >= self.len {
            return None;
        }
        // SAFETY: slots of the first `len` positions are initialized.
        Some(unsafe { self.slots[self.at(i)].assume_init_ref() })
    }

    /// Appends `r` (the newest).
    #[inline]
    pub(super) fn push_back(&mut self, r: Recv) {
        let slot = self.next_slot();
        // SAFETY: next_slot's slot, written whole, then counted.
        unsafe { slot.write(r) };
        self.len += 1;
    }

    /// Appends a plain receive (no multi-receive buffer), written field
    /// by field into its slot. (A whole `Recv` written into the slot was
    /// built on the stack and copied over, 16 more instructions a post.)
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_plain(
        &mut self,
        tagged: bool,
        tag: u64,
        ignore: u64,
        src: Option<Address>,
        iov: &[(u64, u64)],
        report: bool,
        context: *mut c_void,
    ) {
        let p = self.next_slot();
        // SAFETY: next_slot's slot, every field written once below, then
        // counted.
        unsafe {
            addr_of_mut!((*p).tagged).write(tagged);
            addr_of_mut!((*p).tag).write(tag);
            addr_of_mut!((*p).ignore).write(ignore);
            addr_of_mut!((*p).any_src).write(src.is_none());
            addr_of_mut!((*p).src).write(src.unwrap_or(Recv::NO_SRC));
            addr_of_mut!((*p).report).write(report);
            addr_of_mut!((*p).context).write(context);
            addr_of_mut!((*p).multi).write(None);
            let list = addr_of_mut!((*p).iov);
            match iov {
                [one] => list.write(IovList::Inline(1, [*one, (0, 0), (0, 0), (0, 0)])),
                _ => list.write(iov.into()),
            }
        }
        self.len += 1;
    }

    /// The free slot after the newest receive (the slots grown first if
    /// none is), for the caller to write whole and then count.
    #[inline(always)]
    fn next_slot(&mut self) -> *mut Recv {
        if self.len == self.slots.len() {
            self.grow();
        }
        let i = self.at(self.len);
        self.slots[i].as_mut_ptr()
    }

    /// Doubles the slots (8 at first), the receives moved to the start
    /// in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(8);
        let mut v: Vec<MaybeUninit<Recv>> = Vec::with_capacity(cap);
        for k in 0..self.len {
            let i = self.at(k);
            // SAFETY: a live slot, read once: the old one is forgotten
            // with the old vector (MaybeUninit has no drop).
            v.push(MaybeUninit::new(unsafe {
                self.slots[i].assume_init_read()
            }));
        }
        v.resize_with(cap, MaybeUninit::uninit);
        self.slots = v;
        self.head = 0;
    }

    /// Drops the oldest receive where it lies. Nothing when empty.
    #[inline(always)]
    pub(super) fn discard_front(&mut self) {
        if self.len == 0 {
            return;
        }
        let i = self.head;
        self.head = self.at(1);
        self.len -= 1;
        // SAFETY: a live slot, no longer counted as one.
        unsafe { self.slots[i].assume_init_drop() };
    }

    /// Takes the oldest receive out.
    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<Recv> {
        self.remove(0)
    }

    /// Takes out the `i`th receive; the newer ones move up one place.
    pub(super) fn remove(&mut self, i: usize) -> Option<Recv> {
        if i >= self.len {
            return None;
        }
        let at = self.at(i);
        // SAFETY: a live slot, read once; it is then overwritten or no
        // longer counted.
        let r = unsafe { self.slots[at].assume_init_read() };
        if i == 0 {
            self.head = self.at(1);
        } else {
            for k in i..self.len - 1 {
                let (to, from) = (self.at(k), self.at(k + 1));
                // SAFETY: both in bounds; `from` is live and is moved
                // (bitwise) into the slot just vacated.
                unsafe {
                    let p = self.slots.as_mut_ptr();
                    std::ptr::copy_nonoverlapping(p.add(from), p.add(to), 1);
                }
            }
        }
        self.len -= 1;
        Some(r)
    }

    /// The receives, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Recv> + '_ {
        (0..self.len).map(move |k| {
            // SAFETY: slots of the first `len` positions are initialized.
            unsafe { self.slots[self.at(k)].assume_init_ref() }
        })
    }
}

impl std::ops::Index<usize> for Posted {
    type Output = Recv;
    fn index(&self, i: usize) -> &Recv {
        self.get(i).expect("posted receive index out of range")
    }
}

impl Drop for Posted {
    fn drop(&mut self) {
        while !self.is_empty() {
            self.discard_front();
        }
    }
}

/// Byte ranges `(address, length)`: up to [`IOV_MAX`] kept in place, more
/// on the heap.
pub(super) type Pieces = IovList;

/// Whether a posted receive takes a message.
pub(super) fn matches(r: &Recv, w: &Wire) -> bool {
    takes(r, w.flags & W_TAGGED != 0, w.tag, &w.src())
}

/// [`matches`] of a message's fields: tagged or not, its tag, its sender.
#[inline(always)]
pub(super) fn takes(r: &Recv, tagged: bool, tag: u64, src: &Address) -> bool {
    r.tagged == tagged
        && (!tagged || (r.tag & !r.ignore) == (tag & !r.ignore))
        && (r.any_src || r.src == *src)
}
