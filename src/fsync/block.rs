//! The self-describing block every commit writes, and the check of a block read back. Pure (no IO).
//! Imports only: fsync/.
//!
//! Layout, little-endian: magic "IOSATFS1" (8) · run id (8) · byte offset (8) · sequence (8) ·
//! block size (4) · CRC-32 of the whole block with this field zero (4) · payload. The payload
//! is a pattern fixed for the run, so a flipped bit anywhere changes the CRC, a block written
//! by another run has the wrong run id, and a stale or misplaced block has the wrong sequence
//! or offset.
//!
//! CRC-32 (IEEE 802.3, reflected 0xEDB88320, the zlib/gzip one) is written here, slicing-by-8,
//! rather than taken from a crate: it is forty lines with a standard check value, it keeps the
//! dependency list short, and a 16 KiB block costs a few microseconds (outside the timed
//! region in any case).

pub const MAGIC: [u8; 8] = *b"IOSATFS1";
pub const HEADER_BYTES: usize = 40;
const CRC_AT: usize = 36;

const fn crc_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut s = 1;
        while s < 8 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            s += 1;
        }
        i += 1;
    }
    t
}

static CRC_TABLES: [[u32; 256]; 8] = crc_tables();

/// Continue a CRC-32 over `data` (`crc` is the running value, start with 0).
pub fn crc32_update(crc: u32, data: &[u8]) -> u32 {
    let t = &CRC_TABLES;
    let mut c = !crc;
    let mut chunks = data.chunks_exact(8);
    for ch in &mut chunks {
        let lo = u32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]) ^ c;
        let hi = u32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
        c = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = t[0][((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

pub fn crc32(data: &[u8]) -> u32 {
    crc32_update(0, data)
}

/// CRC of a block as if its CRC field were zero.
fn block_crc(block: &[u8]) -> u32 {
    let c = crc32_update(0, &block[..CRC_AT]);
    let c = crc32_update(c, &[0u8; 4]);
    crc32_update(c, &block[CRC_AT + 4..])
}

/// Fill the payload of a block buffer with the run's pattern (once per buffer, not per write).
pub fn fill_payload(block: &mut [u8], run_id: u64) {
    let mut x = run_id | 1;
    for b in block[HEADER_BYTES..].iter_mut() {
        // xorshift64: cheap, deterministic, not constant (so compression can't hide writes).
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

/// Write the header for (run, offset, sequence) into a buffer whose payload is already filled.
/// No allocation: called between timed writes.
pub fn stamp(block: &mut [u8], run_id: u64, offset: u64, seq: u64) {
    block[0..8].copy_from_slice(&MAGIC);
    block[8..16].copy_from_slice(&run_id.to_le_bytes());
    block[16..24].copy_from_slice(&offset.to_le_bytes());
    block[24..32].copy_from_slice(&seq.to_le_bytes());
    let len = block.len() as u32;
    block[32..36].copy_from_slice(&len.to_le_bytes());
    let crc = block_crc(block);
    block[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

/// What a block read back says about itself, once its checksum and identity are right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub seq: u64,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Check one block read back from `offset`: magic, checksum, run id, offset, size.
/// Returns the block's sequence number, or why it is wrong.
pub fn check(block: &[u8], run_id: u64, offset: u64) -> Result<Checked, String> {
    if block.len() < HEADER_BYTES {
        return Err(format!(
            "block at offset {offset} is shorter than its header"
        ));
    }
    if block[0..8] != MAGIC {
        return Err(format!(
            "block at offset {offset} has no iosat header (lost or never-written write)"
        ));
    }
    let stored = u32::from_le_bytes([
        block[CRC_AT],
        block[CRC_AT + 1],
        block[CRC_AT + 2],
        block[CRC_AT + 3],
    ]);
    let computed = block_crc(block);
    if stored != computed {
        return Err(format!(
            "block at offset {offset}: checksum mismatch (stored {stored:08x}, computed {computed:08x}): the data read back is not what was written"
        ));
    }
    let rid = u64_at(block, 8);
    if rid != run_id {
        return Err(format!(
            "block at offset {offset} belongs to run {rid:016x}, not this run {run_id:016x}"
        ));
    }
    let off = u64_at(block, 16);
    if off != offset {
        return Err(format!(
            "block at offset {offset} says it was written at offset {off} (misdirected write)"
        ));
    }
    let size = u32::from_le_bytes([block[32], block[33], block[34], block[35]]) as usize;
    if size != block.len() {
        return Err(format!(
            "block at offset {offset} says it is {size} bytes, expected {}",
            block.len()
        ));
    }
    Ok(Checked {
        seq: u64_at(block, 24),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        // Split updates agree with one pass, across the 8-byte slicing boundary.
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = crc32(&data);
        for cut in [0, 1, 7, 8, 9, 500, 999] {
            assert_eq!(crc32_update(crc32(&data[..cut]), &data[cut..]), whole);
        }
    }

    #[test]
    fn crc32_matches_bytewise_reference() {
        fn slow(data: &[u8]) -> u32 {
            let mut c = !0u32;
            for &b in data {
                c ^= b as u32;
                for _ in 0..8 {
                    c = if c & 1 != 0 {
                        0xEDB8_8320 ^ (c >> 1)
                    } else {
                        c >> 1
                    };
                }
            }
            !c
        }
        let data: Vec<u8> = (0..4099u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        assert_eq!(crc32(&data), slow(&data));
    }

    #[test]
    fn stamped_block_checks_and_any_flip_is_caught() {
        let mut b = vec![0u8; 512];
        fill_payload(&mut b, 42);
        stamp(&mut b, 42, 4096, 7);
        assert_eq!(check(&b, 42, 4096), Ok(Checked { seq: 7 }));
        assert!(check(&b, 43, 4096).unwrap_err().contains("run"));
        assert!(check(&b, 42, 0).unwrap_err().contains("misdirected"));
        for at in [0, 9, 20, 30, 37, 100, 511] {
            let mut c = b.clone();
            c[at] ^= 0x10;
            assert!(check(&c, 42, 4096).is_err(), "flip at {at} not caught");
        }
        let zero = vec![0u8; 512];
        assert!(check(&zero, 42, 4096)
            .unwrap_err()
            .contains("no iosat header"));
    }
}
