//! CRC-32C (Castagnoli), the checksum Pulsar stores after the `0e 01` magic.
//! The `crc32c` crate uses SSE4.2 / ARMv8 CRC instructions when available.

#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Continues a CRC over more bytes; equals the CRC of the concatenation.
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b"data"), 0xAED8_7DD1); // Pulsar's Crc32cChecksumTest
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c_append(crc32c(b"data"), b"data"), crc32c(b"datadata"));
    }
}
