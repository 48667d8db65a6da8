use super::fence::ASYM;
use super::*;

fn addr(id: u32) -> Address {
    Address {
        pid: std::process::id(),
        ep_id: 900_000 + id,
        nonce: 0x1234_5678_9abc_def0 ^ id as u64 ^ (std::process::id() as u64) << 32,
    }
}

/// The answer of [`asym`] is the process's, not its memory image's: a
/// fork(2) child must look (and register) for itself, or it would
/// publish without fences that no sleeper's membarrier orders.
#[test]
fn asym_is_forgotten_across_fork() {
    let parent = asym();
    assert_ne!(ASYM.load(Ordering::Relaxed), 0);
    assert_eq!(ASYM.load(Ordering::Relaxed) == 2, parent);
    // SAFETY: the child only loads an atomic and calls _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = if ASYM.load(Ordering::Relaxed) == 0 {
            0
        } else {
            1
        };
        // SAFETY: ends the child without running the parent's exit code.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status));
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "the child inherited the answer"
    );
    assert_eq!(asym(), parent);
}

#[test]
fn a_message_starts_as_far_past_a_line_in_its_spill_area_as_in_its_cell() {
    let a = addr(50);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    // Every cell and every spill area: a payload LINE_AT bytes into any
    // message starts on a cache line.
    for room in [16, SMALL_DATA, SMALL_DATA + 1, 4096 + 48, CELL_DATA] {
        for i in 0..2 * SPILL_AREAS {
            let mut held = Vec::new();
            for _ in 0..(i % 3) + 1 {
                let mut c = peer.claim(room).unwrap();
                let at = c.data().as_ptr() as usize;
                assert_eq!(at % 64, CELL_HEAD, "room {room}, claim {i}");
                assert_eq!((at + LINE_AT) % 64, 0);
                assert_eq!(c.data().len(), room);
                c.data()[..8].copy_from_slice(&(i as u64).to_ne_bytes());
                c.commit(room, Urgency::Request);
                held.push(i);
            }
            for _ in held {
                assert!(own.recv(|_, m| {
                    assert_eq!(m.len(), room);
                    assert_eq!(m.as_ptr() as usize % 64, CELL_HEAD);
                    assert_eq!(m[..8], (i as u64).to_ne_bytes());
                }));
            }
        }
    }
}

#[test]
fn a_claim_publishes_what_it_commits_and_an_empty_message_when_dropped() {
    let a = addr(40);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    let mut c = peer.claim(16).unwrap();
    c.data()[..5].copy_from_slice(b"hello");
    c.commit(5, Urgency::Request);
    // Dropped unwritten (a panic between claim and commit): the cell
    // is not left claimed, the owner sees an empty message.
    drop(peer.claim(16).unwrap());
    assert!(own.recv(|pid, m| {
        assert_eq!(pid, my_pid());
        assert_eq!(m, b"hello")
    }));
    assert!(own.recv(|_, m| assert!(m.is_empty())));
    assert!(!own.recv(|_, _| panic!("empty ring")));
    assert_eq!(peer.claim(CELL_DATA + 1).err(), Some(Error::MSGSIZE));
}

#[test]
fn ring_delivers_in_order_and_fills() {
    let a = addr(1);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    for i in 0..CELLS as u32 {
        peer.send(&[&i.to_ne_bytes(), b"xyz"], Urgency::Request)
            .unwrap();
    }
    assert_eq!(peer.send(&[b"full"], Urgency::Request), Err(Error::AGAIN));
    for i in 0..CELLS as u32 {
        let mut got = Vec::new();
        assert!(own.recv(|_, m| got.extend_from_slice(m)));
        assert_eq!(&got[..4], &i.to_ne_bytes());
        assert_eq!(&got[4..], b"xyz");
    }
    assert!(!own.recv(|_, _| panic!("empty ring")));
    peer.send(&[b"again"], Urgency::Request).unwrap();
    assert!(own.recv(|_, m| assert_eq!(m, b"again")));
}

#[test]
fn long_messages_spill_and_short_ones_stay_in_their_cell_in_order() {
    let a = addr(9);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    // Around the boundary, the largest, and a long room that the
    // filler uses only a little of (spilled, yet short).
    let lens = [SMALL_DATA, SMALL_DATA + 1, 1, CELL_DATA, 0, SMALL_DATA - 1];
    for lap in 0..3 {
        for (k, &n) in lens.iter().enumerate() {
            let b: Vec<u8> = (0..n).map(|i| (i * 7 + k + lap) as u8).collect();
            peer.send(&[&b], Urgency::Request).unwrap();
            peer.send_with(CELL_DATA, |cell| {
                cell[..3].copy_from_slice(&[k as u8, lap as u8, 0xee]);
                3
            })
            .unwrap();
        }
        for (k, &n) in lens.iter().enumerate() {
            let want: Vec<u8> = (0..n).map(|i| (i * 7 + k + lap) as u8).collect();
            assert!(own.recv(|_, m| assert_eq!(m, &want[..], "lap {lap}, {n} bytes")));
            assert!(own.recv(|_, m| assert_eq!(m, &[k as u8, lap as u8, 0xee])));
        }
    }
    assert!(!own.recv(|_, _| panic!("empty ring")));
    // Past the largest: refused, nothing claimed.
    assert_eq!(
        peer.send_with(CELL_DATA + 1, |_| panic!("no cell for it")),
        Err(Error::MSGSIZE)
    );
    assert!(!own.recv(|_, _| panic!("empty ring")));
}

#[test]
fn the_last_consumed_cell_goes_back_one_message_late() {
    let a = addr(7);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    peer.send(&[b"one"], Urgency::Request).unwrap();
    assert!(own.recv(|_, m| assert_eq!(m, b"one")));
    // Its cell is held: the ring takes one message less.
    let fill = |n: usize| {
        for _ in 0..n {
            peer.send(&[b"x"], Urgency::Request).unwrap();
        }
    };
    fill(CELLS - 1);
    assert_eq!(peer.send(&[b"full"], Urgency::Request), Err(Error::AGAIN));
    // Consuming the next message gives the held cell back.
    assert!(own.recv(|_, m| assert_eq!(m, b"x")));
    peer.send(&[b"x"], Urgency::Request).unwrap();
    assert_eq!(peer.send(&[b"full"], Urgency::Request), Err(Error::AGAIN));
    // The loop ends on the first empty look, which keeps the last
    // cell; a ring is not idle while a cell is held.
    while own.recv(|_, m| assert_eq!(m, b"x")) {}
    assert!(!own.idle());
    fill(CELLS - 1);
    assert_eq!(peer.send(&[b"full"], Urgency::Request), Err(Error::AGAIN));
    // The second empty look gives it back.
    while own.recv(|_, _| {}) {}
    assert!(!own.recv(|_, _| panic!("empty ring")));
    assert!(own.idle());
    fill(CELLS);
    assert_eq!(peer.send(&[b"full"], Urgency::Request), Err(Error::AGAIN));
}

#[test]
fn spilled_messages_are_bounded_by_their_areas_small_ones_by_the_cells() {
    let a = addr(12);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    let big = |k: u8| vec![k; SMALL_DATA + 1 + k as usize];
    // From an empty ring: SPILL_AREAS spilled messages, then -FI_EAGAIN
    // with nothing claimed.
    for k in 0..SPILL_AREAS as u8 {
        peer.send(&[&big(k)], Urgency::Request).unwrap();
    }
    let tail = peer.hdr().tail.load(Ordering::Relaxed);
    assert_eq!(peer.send(&[&big(0)], Urgency::Request), Err(Error::AGAIN));
    assert_eq!(peer.hdr().tail.load(Ordering::Relaxed), tail);
    // Small messages take the rest of the cells.
    let mut small = 0;
    while peer.send(&[b"s"], Urgency::Request).is_ok() {
        small += 1;
    }
    assert_eq!(small, CELLS - SPILL_AREAS);
    // Every message comes out whole and in order.
    for k in 0..SPILL_AREAS as u8 {
        assert!(own.recv(|_, m| assert_eq!(m, &big(k)[..])));
    }
    // An area is free once its message is handled and its batch given
    // back (a batch's bytes, or a look at an empty ring: there is none
    // here, the ring holds the small messages); a spilled message also
    // needs a position, given back one message late: the ring takes one
    // less than were consumed.
    let mut again = 0;
    while peer.send(&[&big(7)], Urgency::Request).is_ok() {
        again += 1;
    }
    assert!((SPILL_AREAS - 1 - spill::BATCH_BYTES / SMALL_DATA..SPILL_AREAS - 1).contains(&again));
    own.spill_batch.flush(own.hdr());
    while peer.send(&[&big(7)], Urgency::Request).is_ok() {
        again += 1;
    }
    assert_eq!(again, SPILL_AREAS - 1);
    for _ in 0..small {
        assert!(own.recv(|_, m| assert_eq!(m, b"s")));
    }
    for _ in 0..again {
        assert!(own.recv(|_, m| assert_eq!(m, &big(7)[..])));
    }
    while own.recv(|_, _| panic!("empty ring")) {}
    assert!(!own.recv(|_, _| panic!("empty ring")));
    // Laps of mixed messages: a spilled one at every position, each area
    // used again and again, with small ones between.
    for lap in 0..3 * CELLS {
        let k = (lap % 200) as u8;
        if lap % 3 == 0 {
            peer.send(&[b"s"], Urgency::Request).unwrap();
        }
        peer.send(&[&big(k)], Urgency::Request).unwrap();
        if lap % 3 == 0 {
            assert!(own.recv(|_, m| assert_eq!(m, b"s")));
        }
        assert!(own.recv(|_, m| assert_eq!(m, &big(k)[..])));
    }
}

#[test]
fn a_spilled_message_takes_an_area_just_given_back() {
    let a = addr(13);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    let big = vec![3u8; 4096];
    let mut at = std::collections::HashSet::new();
    // Exchanged one at a time, the owner looking at its empty ring in
    // between: every message lands in one area.
    for _ in 0..3 * SPILL_AREAS {
        peer.send(&[&big], Urgency::Request).unwrap();
        assert!(own.recv(|_, m| {
            assert_eq!(m, &big[..]);
            at.insert(m.as_ptr() as usize);
        }));
        assert!(!own.recv(|_, _| panic!("empty ring")));
    }
    assert_eq!(
        at.len(),
        1,
        "one message at a time went through {} areas",
        at.len()
    );
    // Without a look at an empty ring, the areas go back a batch at a
    // time: a stream of 4 KiB messages goes round BATCH_BYTES of them.
    at.clear();
    for _ in 0..3 * SPILL_AREAS {
        peer.send(&[&big], Urgency::Request).unwrap();
        assert!(own.recv(|_, m| {
            at.insert(m.as_ptr() as usize);
        }));
    }
    assert_eq!(at.len(), spill::BATCH_BYTES / 4096, "{} areas", at.len());
}

#[test]
fn a_claim_left_by_a_dead_producer_is_skipped() {
    let a = addr(8);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    // A producer that died between its claim and its publication: the
    // cell is claimed (tail moved on) and carries a pid that is gone.
    // SAFETY: fork(2) in a test; the child exits at once.
    let dead = unsafe {
        let child = libc::fork();
        if child == 0 {
            libc::_exit(0);
        }
        let mut status = 0;
        libc::waitpid(child, &mut status, 0);
        child as u32
    };
    // One claim that says who made it (seen on the cell line), one
    // that died before it could (seen only in `tail`), and one that took
    // a spill area and said so: the area comes back with the skipped
    // position.
    for (pid, spilled) in [(dead, false), (0, false), (dead, true)] {
        let h = peer.hdr();
        let area = spilled.then(|| spill::take(h).unwrap());
        let pos = h.tail.fetch_add(1, Ordering::Relaxed);
        peer.cell_head(pos).pid.store(pid, Ordering::Relaxed);
        if let Some(i) = area {
            peer.cell_head(pos)
                .len
                .store(spilled_len(0, i), Ordering::Relaxed);
        }
        peer.send(&[b"behind"], Urgency::Request).unwrap();
        // Nothing is handed out while the claim may still be
        // published; once it is STALL old and its producer gone (or
        // unknown), the message behind it is.
        let start = Instant::now();
        let mut got = Vec::new();
        while got.is_empty() {
            own.recv(|_, m| got.extend_from_slice(m));
            assert!(
                start.elapsed() < STALL * 20,
                "the stalled claim (pid {pid}) was never skipped"
            );
        }
        assert!(start.elapsed() >= STALL, "skipped before STALL (pid {pid})");
        assert_eq!(got, b"behind");
    }
    // Every area takes a message again.
    let big = vec![9u8; SMALL_DATA + 1];
    for _ in 0..SPILL_AREAS {
        peer.send(&[&big], Urgency::Request).unwrap();
    }
    assert_eq!(peer.send(&[&big], Urgency::Request), Err(Error::AGAIN));
    for _ in 0..SPILL_AREAS {
        assert!(own.recv(|_, m| assert_eq!(m, &big[..])));
    }
}

#[test]
fn many_producers_lose_nothing() {
    let a = addr(2);
    let own = Segment::create(&a, None).unwrap();
    let peers: Vec<Segment> = (0..4).map(|_| Segment::open(&a).unwrap()).collect();
    let n = 5000u32;
    let mut seen = vec![0u32; 4];
    std::thread::scope(|s| {
        for (t, p) in peers.iter().enumerate() {
            s.spawn(move || {
                for i in 0..n {
                    while p
                        .send(
                            &[&(t as u32).to_ne_bytes(), &i.to_ne_bytes()],
                            Urgency::Request,
                        )
                        .is_err()
                    {
                        std::hint::spin_loop();
                    }
                }
            });
        }
        let mut got = 0;
        while got < 4 * n {
            if own.recv(|_, m| {
                let t = u32::from_ne_bytes(m[..4].try_into().unwrap()) as usize;
                let i = u32::from_ne_bytes(m[4..8].try_into().unwrap());
                assert_eq!(i, seen[t], "per-producer order");
                seen[t] += 1;
            }) {
                got += 1;
            }
        }
    });
    assert_eq!(seen, vec![n; 4]);
}

#[test]
fn closed_segment_is_gone_and_reported() {
    let a = addr(3);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    assert!(!peer.owner_gone());
    drop(own);
    assert!(peer.owner_gone());
    assert_eq!(Segment::open(&a).err(), Some(Error::NOENT));
}

/// Resident bytes of this process's mapping at `base` (`Rss` of its
/// entry in /proc/self/smaps): the pages it has mapped.
pub(crate) fn mapped_bytes(base: *const u8) -> usize {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let start = format!("{:x}-", base as usize);
    let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
    assert!(lines.next().is_some(), "no mapping at {base:?}");
    let rss = lines.find(|l| l.starts_with("Rss:")).unwrap();
    let kb: usize = rss.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// The owner's mapping and a peer's both have every page of the
/// segment from the start: the data path never faults on one (see
/// `Segment::map`). Unpopulated, the owner maps only the pages it
/// initialises (140 KiB: the header and the cells), a peer fewer.
#[test]
fn segments_are_mapped_with_all_their_pages() {
    let a = addr(11);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    let whole = SEGMENT_BYTES / 4096 * 4096;
    let (o, p) = (mapped_bytes(own.base), mapped_bytes(peer.base));
    assert!(o >= whole, "the owner maps {o} of {SEGMENT_BYTES}");
    assert!(p >= whole, "a peer maps {p} of {SEGMENT_BYTES}");
}

#[test]
fn a_second_segment_for_one_address_is_refused() {
    let a = addr(4);
    let _own = Segment::create(&a, None).unwrap();
    assert_eq!(Segment::create(&a, None).err(), Some(Error::ADDRINUSE));
}

fn readable(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout only looks.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

#[test]
fn armed_owner_is_woken_by_the_next_request() {
    let a = addr(5);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    let (fd, _) = own.wake_fd().expect("a wake-up socket");
    // Unarmed: senders write nothing.
    peer.send(&[b"one"], Urgency::Request).unwrap();
    assert!(!readable(fd));
    // A message is pending: arming says not to sleep.
    assert!(!own.arm(true));
    assert!(own.recv(|_, m| assert_eq!(m, b"one")));
    // Armed for requests only: a reply does not wake, a request does,
    // and the byte is queued before send returns.
    assert!(own.arm(false));
    peer.send(&[b"reply"], Urgency::Reply).unwrap();
    assert!(!readable(fd));
    peer.send(&[b"request"], Urgency::Request).unwrap();
    assert!(readable(fd));
    // One byte per arming: the first sender disarmed it.
    peer.send(&[b"another"], Urgency::Request).unwrap();
    assert!(own.recv(|_, m| assert_eq!(m, b"reply")));
    assert!(own.recv(|_, m| assert_eq!(m, b"request")));
    assert!(own.recv(|_, m| assert_eq!(m, b"another")));
    // Arming again reads the old byte: the fd waits for the next one.
    assert!(own.arm(true));
    assert!(!readable(fd));
    peer.send(&[b"ack"], Urgency::Reply).unwrap();
    assert!(readable(fd));
    assert!(own.recv(|_, m| assert_eq!(m, b"ack")));
    // A stranger's bytes are read too.
    for _ in 0..20 {
        peer.wake_owner();
    }
    assert!(readable(fd));
    assert!(own.arm(false));
    assert!(!readable(fd));
    // A peer's segment has no socket of its own to watch.
    assert!(peer.wake_fd().is_none());
    assert!(!peer.arm(false));
}

#[test]
fn this_process_is_alive_and_pid_reuse_is_told_apart() {
    let me = std::process::id();
    let t = start_time(me).unwrap();
    assert!(alive(me, t));
    assert!(!alive(me, t + 1));
}

/// A producer asks for cells ahead only within a stream: claims with no
/// message handled between them by the sending endpoint. A claim after
/// one is handled (an exchange, where the owner polls the next cells)
/// does not; an unwatched segment always does.
#[test]
fn claims_count_as_a_stream_until_the_sender_handles_a_message() {
    let a = addr(47);
    let own = Segment::create(&a, None).unwrap();
    let mut peer = Segment::open(&a).unwrap();
    assert!(peer.streaming() && peer.streaming());
    let handled = Arc::new(AtomicU64::new(7));
    peer.watch(Arc::clone(&handled));
    assert!(!peer.streaming(), "the first claim follows nothing");
    assert!(peer.streaming());
    assert!(peer.streaming());
    handled.store(8, Ordering::Relaxed);
    assert!(!peer.streaming(), "a message was handled in between");
    assert!(peer.streaming());
    // The decision changes no cell: messages still go through.
    peer.send(&[b"x"], Urgency::Request).unwrap();
    assert!(own.recv(|_, m| assert_eq!(m, b"x")));
}

/// What a producer learns from the owner's `head` holds at every step:
/// every position below the bound (and not yet claimed) finds its cell
/// given back for its lap, whatever the owner holds back, through
/// several laps of sends and receives in uneven runs.
#[test]
fn positions_below_the_learnt_bound_find_their_cells_given_back() {
    let a = addr(48);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    let (mut sent, mut got) = (0u64, 0u64);
    let mut step = 0u64;
    while got < 5 * CELLS as u64 {
        step += 1;
        // Sends in runs of 1 to 7, receives in runs of 1 to 5.
        for _ in 0..(step % 7 + 1) {
            if peer.send(&[&sent.to_ne_bytes()], Urgency::Request).is_ok() {
                sent += 1;
            }
        }
        for _ in 0..(step * 3 % 5 + 1) {
            own.recv(|_, m| {
                assert_eq!(m, got.to_ne_bytes(), "in order, none lost");
                got += 1;
            });
        }
        let bound = peer.learn_free(peer.hdr());
        assert_eq!(bound, peer.free_until.load(Ordering::Relaxed));
        let tail = peer.hdr().tail.load(Ordering::Relaxed);
        for p in tail..peer.free_until.load(Ordering::Relaxed) {
            assert_eq!(
                peer.cell_head(p).seq.load(Ordering::Relaxed),
                p,
                "position {p} (tail {tail}) is below the bound but its cell is not given back"
            );
        }
    }
}

/// A dead producer's claim, skipped by the owner, goes back after the
/// cell the owner still holds: cells go back in order, which is what
/// producers' bounds count on.
#[test]
fn a_skipped_claim_gives_back_the_held_cell_first() {
    let a = addr(49);
    let own = Segment::create(&a, None).unwrap();
    let peer = Segment::open(&a).unwrap();
    peer.send(&[b"a"], Urgency::Request).unwrap();
    assert!(own.recv(|_, m| assert_eq!(m, b"a")));
    assert_ne!(
        own.held.load(Ordering::Relaxed),
        0,
        "the consumed cell is held"
    );
    let dead = peer.hdr().tail.fetch_add(1, Ordering::Relaxed);
    own.free(dead);
    assert_eq!(own.held.load(Ordering::Relaxed), 0);
    assert_eq!(own.cell_head(0).seq.load(Ordering::Relaxed), CELLS as u64);
    assert_eq!(
        own.cell_head(dead).seq.load(Ordering::Relaxed),
        dead + CELLS as u64
    );
    assert_eq!(own.hdr().head.load(Ordering::Relaxed), dead + 1);
}
