//! The cache lines of the ring asked for ahead of their use: by the owner,
//! the message it is about to read, the next one, and (for writing) the
//! cell it has just consumed; by a producer, for writing, the cell it will
//! write a few messages on. A prefetch reads nothing and faults on
//! nothing: none of this changes what the ring holds. Every line asked
//! for lies inside the segment's mapping.

use super::{CELL, CELLS, CELL_HEAD};

const _: () = assert!(PREFETCH_MAX + CELL_HEAD <= CELL && AHEAD < CELLS as u64);

/// Asks for the first lines of the next cell, as many as the message just
/// consumed took in place, up to [`PREFETCH_MAX`] bytes (the first line
/// only after a spilled one) (see [`super::Segment::recv`]). Its sequence word is
/// not looked at: a load that misses would hold the next locked
/// instruction until it is answered, where a prefetch holds nothing.
/// Fabtests, alternating rounds on the Intel host, medians: `fi_rdm_bw`
/// 64 bytes 588 MB/s against 562 when the next cell's lines were asked for
/// only after its sequence word was read, and `fi_rdm_tagged_bw` 586
/// against 568 (15 rounds); that variant against none at all, 572 against
/// 540 and 552 against 530 (9 rounds), `fi_rdm_tagged_bw` 256 bytes 2162
/// against 1944. Ping-pong within 0.02 us.
#[inline(always)]
pub(super) fn prefetch_next(cell: *mut u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for i in 0..(CELL_HEAD + len.min(PREFETCH_MAX)).div_ceil(64) {
        // SAFETY: a prefetch reads nothing and cannot fault; the lines are
        // inside the cell (PREFETCH_MAX + CELL_HEAD <= CELL).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                cell.add(64 * i) as *const i8
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (cell, len);
}

/// Bytes of an in-place message whose lines [`prefetch_rest`] asks for.
pub(super) const PREFETCH_MAX: usize = 256;

/// Asks at once for the cache lines of an in-place message after its first
/// (which the owner has just read, with the sequence word), up to
/// [`PREFETCH_MAX`] bytes. The producer's CPU holds them; read by the
/// handler, each would be a transfer of its own, started only after the
/// locks taken on the way. Fabtests, 5 alternating rounds on the Intel
/// host, with against without: `fi_rdm_bw` 128 bytes 1021-1133 MB/s
/// against 797-947, 256 bytes 1820-2007 against 1403-1457;
/// `fi_rdm_tagged_bw` 128 and 256 bytes, medians 985 and 1699 against 890
/// and 1395; `fi_rma_bw -o write` 64 bytes (a write's header is longer)
/// 375 against 319; `fi_rdm_pingpong` 256 bytes 0.42-0.44 us against
/// 0.44-0.47; 8 and 64-byte messages and 512 bytes unchanged. Past
/// [`PREFETCH_MAX`] the handler's copy streams and the hardware
/// prefetches; prefetching a whole 512-byte message measured no better.
/// A prefetch reads nothing and faults on nothing.
#[inline(always)]
pub(super) fn prefetch_rest(msg: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = msg as usize;
        let end = start + len.min(PREFETCH_MAX);
        let mut line = (start & !63) + 64;
        while line < end {
            // SAFETY: a prefetch reads nothing and cannot fault; the line
            // is inside the message anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    line as *const i8,
                )
            };
            line += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (msg, len);
}

/// Asks for the first two lines of each page of a spilled message after
/// its first, before the handler copies it out (the second may lie past
/// the message's end, still inside its spill area). The
/// hardware's prefetcher follows a copy within a page and starts again at
/// each page boundary, a few misses late; asked for at once, every page's
/// start is on its way while the first is copied. Fabtests, alternating
/// rounds on the Intel host, medians, with against without: `fi_rdm_bw`
/// 16 KiB 15174 MB/s against 13834 (11 rounds), `fi_rdm_tagged_bw` 16 KiB
/// 15204 against 13504 (9), 12 KiB 12374 against 11628 (7); `fi_rma_bw -o
/// writedata` 16 KiB 10505 against 10293; 4 and 8 KiB messages within 3%.
#[inline(always)]
pub(super) fn prefetch_pages(msg: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        const PAGE_LINES: usize = 2;
        let end = msg as usize + len;
        let mut page = (msg as usize & !4095) + 4096;
        while page < end {
            for i in 0..PAGE_LINES {
                // SAFETY: a prefetch reads nothing and cannot fault.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        (page + 64 * i) as *const i8,
                    )
                };
            }
            page += 4096;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (msg, len);
}

/// How many positions past its claim a producer asks for a cell's lines
/// ([`prefetch_own`]). Not the next one: an owner that has caught up
/// polls the next position's first line, and would have it taken away.
pub(super) const AHEAD: u64 = 4;

/// Asks, as a claim is made, for the lines of the cell [`AHEAD`] positions
/// on, for writing: as many as this claim's message takes in place (a
/// stream's messages are alike), the first only for a spilled one. The
/// owner took them over when it read and gave back the cell; without it
/// each is fetched by the store that writes the message, and the next
/// locked instruction (a lock, the next claim) waits for those fetches,
/// one message at a time. Fabtests, 5 alternating rounds on the Intel
/// host, medians, with against without: `fi_rma_bw -o write` 64 bytes
/// 503 MB/s against 334, `-o writedata` 496 against 396; `fi_rdm_bw` 64
/// bytes 518 against 478, 128 bytes 1009 against 935, 512 bytes 3302
/// against 2889; `fi_rdm_tagged_bw` 256 bytes 1900 against 1764;
/// `fi_rdm_pingpong` 64 bytes 0.35 us against 0.38. Asking for the next
/// position instead slowed the 8-byte ping-pong by 0.07 us. The owner
/// asks for a consumed cell's first line the same way ([`super::Segment::recv`]).
///
/// Only within a stream ([`super::Segment::streaming`]). On the Intel
/// host a line held for writing by one CPU is taken away from it when
/// another CPU reads it (measured with two threads: the first CPU's next
/// read of a line it had written, or only asked for with PREFETCHW, took
/// ~240 cycles after the other read it, ~45 when it had only read it).
/// In an exchange the owner polls each cell before its producer claims
/// it, so the line asked for ahead had left again by then, and whether
/// the claim found it back depended on where the linker placed the code
/// (the hardware's own prefetches): `fi_rdm_pingpong` 8 bytes took 0.28
/// or 0.33-0.37 us across 7 builds of the same source with functions or
/// loops aligned differently, and 0.28-0.31 in all of them without the
/// prefetch. Within streams, where the producer runs ahead of the
/// owner, it stays (64 bytes, 5 alternating rounds: `fi_rma_bw -o
/// write` 526 MB/s against 508 asking always, `fi_rdm_bw` 668 against
/// 658, `fi_rdm_tagged_bw` 671 against 637).
#[inline(always)]
pub(super) fn prefetch_own(cell: *mut u8, room: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let lines = if room > super::SMALL_DATA {
            1
        } else {
            (CELL_HEAD + room).div_ceil(64)
        };
        for i in 0..lines {
            // SAFETY: a prefetch reads nothing and cannot fault; the
            // lines are inside the cell. PREFETCHW is a no-op where the
            // CPU lacks it.
            unsafe {
                std::arch::asm!(
                    "prefetchw [{0}]",
                    in(reg) cell.add(64 * i),
                    options(nostack, preserves_flags, readonly)
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (cell, room);
}
