#!/usr/bin/env python3
"""Writes fuzz/corpus/: a handful of tiny inputs for fuzz_mr, each a valid
program in the byte format fuzz_mr.c decodes (domain bytes, then operations).

Usage: python3 fuzz/mkcorpus.py [outdir]   (default: fuzz/corpus next to this)

The format, in short (see fuzz_mr.c for the whole of it):
  domain:   d0 (bit0 FI_HMEM, bits1-2 auth mode: 1 FI_AV_AUTH_KEY, 2 domain
            auth key; bit3 FI_REG_MR EQ; bit4 extra mr_mode u16 follows;
            bit5 mr_iov_limit from d2; 0x60 BASIC/SCALABLE), d1 (API version
            index), d2
  op byte % 16: 0-3 regattr, 4 reg, 5-6 regv, 7 close, 8 raw_attr,
            9 map_raw, 10 unmap, 11 enable, 12 refresh, 13 xpu_desc,
            14 bind (|0x80) / key+desc, 15 close domain early (|0x80) / EQ check
"""
import os
import struct
import sys

LATEST = 7  # index of the headers' own API version in fuzz_mr.c's table


def u8(v):
    return bytes([v & 0xFF])


def u16(v):
    return struct.pack("<H", v & 0xFFFF)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def dom(d0=0, ver=LATEST, d2=0, extra_mode=None):
    b = u8(d0 | (0x10 if extra_mode is not None else 0)) + u8(ver) + u8(d2)
    if extra_mode is not None:
        b += u16(extra_mode)
    return b


def iov_buf(off, length):
    """An iov inside the harness buffer: off, 1 + (length - 1)."""
    return u8(0) + u16(off) + u16(length - 1)


def iov_sub(mr, j, off, length):
    """Part of iov j of the input's MR number mr."""
    return u8(4) + u8(mr) + u16(j) + u16(off) + u16(length - 1)


def iov_any(base, length):
    """An iov with any base and length (case 10 of gen_one)."""
    return u8(10) + u64(base) + u64(length)


def iovs(*items, null=False):
    return u8(len(items)) + b"".join(items) + u8(0 if null else 1)


ACCESS_RW_REMOTE = 0x30  # FI_REMOTE_READ | FI_REMOTE_WRITE (bits 4, 5)
ACCESS_ALL = 0x7F


def key_small(k):
    return u8(k << 3)  # case 0: k >> 3


def common(access, key, flags=0, extra_flags=None, offset=None, ctx=0):
    """access, offset (0 unless given), key, flags (bits of fuzz_mr.c's
    gen_flags table, plus raw extra_flags), context (&ctxvals[ctx])."""
    b = u8(access) + (u8(1) if offset is None else u8(0) + u64(offset)) + key
    if extra_flags is not None:
        b += u8(0x80 | 0x40 | flags) + u64(extra_flags)
    else:
        b += u8(0) if flags == 0 else u8(0x80 | flags)
    return b + u8(1) + u8(ctx)


def attr_tail(auth=4, auth_bytes=b"", iface=0, hmem_data=1, page=0,
              base=None, sub_cnt=0):
    b = u8(auth) + auth_bytes + u8(iface) + u8(hmem_data) + u8(page)
    b += u8(0) if base is None else u8(130) + u8(base)
    b += u8(sub_cnt)
    return b


def regattr(iov, access=ACCESS_RW_REMOTE, key=key_small(1), m=0, cm=None,
            **kw):
    return u8(0) + u8(m) + iov + common(access, key, **(cm or {})) \
        + attr_tail(**kw)


def reg(off, length, access=ACCESS_RW_REMOTE, key=key_small(2), m=0):
    # fi_mr_reg: one iov, and neither an iov count nor an iov_null byte.
    return u8(4) + u8(m) + iov_buf(off, length) + common(access, key)


def regv(iov, access=ACCESS_RW_REMOTE, key=key_small(3), m=1, **kw):
    return u8(5) + u8(m) + iov + common(access, key, **kw)


def close(i, vtable=0):
    return u8(7) + u8(i) + u8(vtable)


def raw_attr(i):
    return u8(8) + u8(i) + u8(0) + u8(3)  # ks: the learned size (or 40)


def map_raw_exact(i):
    return u8(9) + u8(0) + u8(i)


def unmap_mapped(j=0):
    return u8(10) + u8(1) + u8(j)


def close_domain():
    return u8(0x8F)


SEEDS = {
    # A plain fi_mr_regattr and fi_close.
    "regattr_close": dom() + regattr(iovs(iov_buf(0, 4096))) + close(0),
    # fi_mr_reg and fi_mr_regv with three iovs, closed through the vtable.
    "reg_regv": dom() + reg(128, 64) + regv(iovs(iov_buf(0, 100),
                                                 iov_buf(8192, 200),
                                                 iov_buf(16384, 300)))
    + close(1, 1) + close(0),
    # A sub-MR inside a base, the base's close refused, then both closed.
    "sub_mr": dom() + regattr(iovs(iov_buf(0, 8192)), access=ACCESS_ALL)
    + regattr(iovs(iov_sub(0, 0, 64, 512)), key=key_small(9), base=0)
    + close(0) + close(1) + close(0),
    # Raw key round trip: raw_attr, map_raw, unmap, close.
    "raw_roundtrip": dom() + regattr(iovs(iov_buf(0, 4096))) + raw_attr(0)
    + raw_attr(0) + map_raw_exact(0) + unmap_mapped() + close(0),
    # FI_HMEM domain with an FI_REG_MR event queue; iface SYSTEM.
    "hmem_eq": dom(d0=0x09) + regattr(iovs(iov_buf(0, 4096)))
    + regattr(iovs(iov_buf(4096, 4096)), key=key_small(5), iface=1)
    + u8(0x0F) + close(0),
    # FI_AV_AUTH_KEY domain: regattr with a struct fi_mr_auth_key, and a
    # refused fi_mr_reg.
    "av_auth_key": dom(d0=0x02) + regattr(iovs(iov_buf(0, 4096)), auth=0,
                                         auth_bytes=bytes(16) + u64(3))
    + reg(0, 64),
    # Invalid requests: iov_count 0, offset != 0, unknown flags.
    "invalid": dom() + regv(iovs()) + regv(iovs(iov_buf(0, 64)), key=key_small(4),
                            offset=4096)
    + regattr(iovs(iov_buf(0, 64)), key=key_small(6),
              cm={"extra_flags": 1 << 33})
    + regattr(iovs(iov_buf(0, 64)), access=0xFF, key=key_small(8)) + u64(1 << 20),
    # Closing the domain with a live MR (-FI_EBUSY), then with none.
    "domain_close": dom() + reg(0, 64) + close_domain() + close(0)
    + close(0) + close_domain(),
    # API 1.4 (FI_MR_BASIC/SCALABLE era) with a short fi_mr_attr.
    "api_1_4": dom(ver=0) + regattr(iovs(iov_buf(0, 4096))) + close(0),
    # Extra mr_mode bits: FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_RAW.
    "mode_allocated_raw": dom(extra_mode=0x38) + regattr(iovs(iov_buf(0, 4096)))
    + regattr(u8(1) + u8(9) + u16(0) + u16(100) + u8(1), key=key_small(7))
    + raw_attr(0) + close(0),
    # Remote access to most of the address space (16 MiB up to the top of
    # user space, the sanitizer's shadow and heap included): its huge-page
    # blocks are counted, and only those with present pages looked at.
    "wide_range": dom() + regattr(iovs(iov_any(1 << 24, (0x7FFF << 32) - (1 << 24))))
    + close(0),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"mkcorpus: {len(SEEDS)} seeds in {out}")


if __name__ == "__main__":
    main()
