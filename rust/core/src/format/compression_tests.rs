//! Tests of `format::compression` (a file of their own to keep the codec code short).

use super::*;

const LOREM: &str = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Cras id massa odio. Duis commodo ligula sed efficitur cursus. Aliquam sollicitudin, tellus quis suscipit tincidunt, erat sem efficitur nulla, in feugiat diam ex a dolor. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubilia Curae; Vestibulum ac volutpat nisl, vel aliquam elit. Maecenas auctor aliquet turpis, id ullamcorper metus. Ut tincidunt et magna non ultrices. Quisque lacinia metus sed egestas tincidunt. Sed congue lacinia maximus.";
// Spec §12.1, from Pulsar's CompressorCodecTest.
const ZLIB: &str = "789c54914d4ec4300c85aff20e50f502acd0b0840542b03789a7b2e4249dd8461c1f7706a16157d5f1fbf9fc3c2637c86ed150878e09130735f6056574e3e2ec31415576b1227d03abf88ad32483543432238c2a63c55388e5566ba30ea86ca104e30a3e9fa5c82153625ad88a47954b50830dd5eba84a5fe0ac1a86cb2193cf4a5a3a5c7a911a3d03f1244fc17627d843951648c79963939c57495dfe06ddfaacf86073f90ccd86d49d7fcbee535ada1c8b1425e786318b40a3787eb323d4a71436ecc3822767f84f51219c62123ffcd32df81a1abea77f17d3055faca0df9237602fc4857b424b3b4fced769da648b24bb1c2c8f2ead8cb9f3445ee000f57e07e008d568eb843efa5fbc15afc92ba5a094f7c97cd7d51bf82d33a6e59fc48ab7fc9d87ddeedfd3b7b434fb010000ffff";
const LZ4: &str = "f1aa4c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061646970697363696e6720656c69742e2043726173206964206d61737361206f64696f2e204475697320636f6d6d6f646f206c6967756c612073656420656666696369747572206375727375732e20416c697175616d20736f6c6c696369747564696e2c2074656c6c757320717569732073757363697069742074696e636964756e742c20657261742073656d206566663600f20e72206e756c6c612c20696e2066657567696174206469616d2065782061d000f3022e20566573746962756c756d20616e7465ed00617072696d69733900f92761756369627573206f726369206c756374757320657420756c74726963657320706f737565726520637562696c69612043757261653b5800f3076320766f6c7574706174206e69736c2c2076656c2061e500023101f2004d616563656e617320617563746f721e00a06574207475727069732c4c0100cc00f7016d636f72706572206d657475732e20550101009500956d61676e61206e6f6e9f00f2022e2051756973717565206c6163696e69613b00027901666765737461734401502e20536564d90118673000706178696d75732e";
const ZSTD: &str = "28b52ffd600c017d0900c6573c1b9027314099d2a79d3ee4d712d9a201c61c60008415bcfbc24c1802330033003300b7c8cf78602958ceaf800dfc81a64c2a3eeea453b0a13f33625ef9e407f9ac9a96a5c172a156c8faf4c1c3c36533b98b1d1c08857e58e9c8dac1e62ee86e4db1b4d231176af67899abf5c92b3711cebd3375617edc61bad0227e013672f36cbd7e38980f4b5337564a740f132e00a3b305d3ef862ddbb14d4c9c563f7a6b35e76aedf975d0b986d752befc24a6865cf6d6704d43b0414e3007466e7902218719d848d234846e5e74b645e4b7c0864163320895031bb96ac5c79283558a7c7256ad76506bc949c6ca88807c967071191500535970afd547bb8b6f0dd0eb5822abc3580008d6f669019e5640828ea2d9b1a02d13b685db5c2f0cb70c9edac05061b912e2f3395e150b9b01";
const SNAPPY: &str = "8c04f0b44c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061646970697363696e6720656c69742e2043726173206964206d61737361206f64696f2e204475697320636f6d6d6f646f206c6967756c612073656420656666696369747572206375727375732e20416c697175616d20736f6c6c696369747564696e2c2074656c6c757320717569732073757363697069742074696e636964756e742c20657261742073656d1d516c6e756c6c612c20696e2066657567696174206469616d20657820612005d0442e20566573746962756c756d20616e74652009ed147072696d69730539d861756369627573206f726369206c756374757320657420756c74726963657320706f737565726520637562696c69612043757261653b202e5800586320766f6c7574706174206e69736c2c2076656c20616c09e52931384d616563656e617320617563746f72091e246574207475727069732c214c01cc286d636f72706572206d6574212900553d010195206d61676e61206e6f6e159f402e2051756973717565206c6163696e6961093b002025791c67657374617320743144102e2053656421d900672e3000186178696d75732e";

fn dec(codec: Codec, input: &[u8], size: usize) -> Result<Vec<u8>> {
    let mut d = Decompressor::default();
    d.decompress(codec, input, size as u32, DEFAULT_MAX_UNCOMPRESSED_SIZE, 0)
        .map(|b| b.to_vec())
}

#[test]
fn pulsar_codec_test_vectors() {
    assert_eq!(LOREM.len(), 524);
    for (codec, vector) in [
        (Codec::Zlib, ZLIB),
        (Codec::Lz4, LZ4),
        (Codec::Zstd, ZSTD),
        (Codec::Snappy, SNAPPY),
    ] {
        let out = dec(codec, &hex::decode(vector).unwrap(), 524).unwrap();
        assert_eq!(out, LOREM.as_bytes(), "{codec}");
    }
}

#[test]
fn zlib_never_doubles_the_sync_flush_marker() {
    // Every size up to a few KB, compressible and not: exactly one
    // trailing `00 00 ff ff`, as java.util.zip.Deflater writes it.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..6000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    for len in 0..3000usize {
        // Half noise, half repetitive: output sizes sweep past every capacity.
        let text: Vec<u8> = (0..len)
            .map(|i| {
                if i % 2 == 0 {
                    noise[i]
                } else {
                    b"abcab"[i % 5]
                }
            })
            .collect();
        let c = compress(Codec::Zlib, &text).unwrap();
        if len > 0 {
            assert!(c.ends_with(&[0, 0, 0xff, 0xff]), "len {len}");
            assert!(
                !c.ends_with(&[0, 0, 0xff, 0xff, 0, 0, 0, 0xff, 0xff]),
                "len {len}"
            );
        }
        assert_eq!(dec(Codec::Zlib, &c, len).unwrap(), text);
    }
}

#[test]
fn java_zlib_encoding_is_byte_identical() {
    // java.util.zip.Deflater + SYNC_FLUSH reproduces the spec vector; so do we.
    assert_eq!(
        hex::encode(compress(Codec::Zlib, LOREM.as_bytes()).unwrap()),
        ZLIB
    );
    assert_eq!(
        hex::encode(compress(Codec::Zlib, b"hello").unwrap()),
        "789cca48cdc9c907000000ffff"
    );
    assert!(compress(Codec::Zlib, b"").unwrap().is_empty());
}

#[test]
fn client_vectors_for_hello_and_zeros() {
    for (codec, hexed) in [
        (Codec::Zlib, "789cca48cdc9c907000000ffff"),
        (Codec::Lz4, "5068656c6c6f"),
        (Codec::Zstd, "28b52ffd200529000068656c6c6f"),
        (Codec::Snappy, "051068656c6c6f"),
    ] {
        assert_eq!(
            dec(codec, &hex::decode(hexed).unwrap(), 5).unwrap(),
            b"hello",
            "{codec}"
        );
    }
    // Java's unterminated stream and C++'s complete one both decode.
    assert_eq!(
        dec(
            Codec::Zlib,
            &hex::decode("789c6260800100000000ffff").unwrap(),
            10
        )
        .unwrap(),
        vec![0; 10]
    );
    assert_eq!(
        dec(
            Codec::Zlib,
            &hex::decode("789c6360800100000a0001").unwrap(),
            10
        )
        .unwrap(),
        vec![0; 10]
    );
}

#[test]
fn round_trips_every_codec_including_empty() {
    let big: Vec<u8> = (0..200_000u32)
        .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
        .collect();
    for codec in Codec::ALL {
        for input in [&b""[..], b"x", LOREM.as_bytes(), &big] {
            let c = compress(codec, input).unwrap();
            assert_eq!(
                dec(codec, &c, input.len()).unwrap(),
                input,
                "{codec} len {}",
                input.len()
            );
        }
    }
}

#[test]
fn a_reused_buffer_never_changes_a_stream_result() {
    // Fuzz finding (issue 16 runs, `decompress`): a Decompressor whose
    // buffer was longer than the first output step called zstd with no
    // output space once the step filled, and reported "Destination buffer
    // is too small" where a fresh one reported "Data corruption detected".
    // The input as the target reads it: codec, size, bytes.
    let data = [
        0xdf, 0x05, 0x00, 0x01, 0x2c, 0x28, 0xb5, 0x2f, 0xfd, 0x60, 0x2c, 0x00, 0xdd, 0x00, 0x00,
        0xa0, 0x7b, 0x69, 0x22, 0x64, 0x22, 0x3a, 0x38, 0x37, 0x33, 0x35, 0x37, 0x32, 0x2c, 0x22,
        0x76, 0x22, 0x3a, 0x22, 0x61, 0x62, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff,
    ];
    let size = u32::from_be_bytes(data[1..5].try_into().unwrap()) % ((1 << 20) + 1);
    for codec in [Codec::Zstd, Codec::Zlib] {
        let fresh = dec(codec, &data[5..], size as usize);
        for len in [1usize, 4096, 64 << 10, (64 << 10) + 1, 300_000, 1 << 20] {
            let mut d = Decompressor {
                out: vec![7; len],
                ..Decompressor::default()
            };
            let warm = d
                .decompress(codec, &data[5..], size, 1 << 20, 0)
                .map(<[u8]>::to_vec);
            assert_eq!(fresh, warm, "{codec}, buffer of {len}");
        }
    }
}

#[test]
fn size_limit_is_checked_before_allocating() {
    let mut d = Decompressor::default();
    let err = d
        .decompress(Codec::Lz4, b"\x00", u32::MAX, 1024, 17)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "uncompressed_size 4294967295 exceeds the limit of 1024 bytes (entry offset 17)"
    );
    assert_eq!(d.out.capacity(), 0);
    // An LZ4 block of 1 byte cannot hold 1 MiB: refused before the buffer grows.
    let err = d
        .decompress(Codec::Lz4, b"\x00", 1 << 20, 1 << 30, 0)
        .unwrap_err();
    assert!(
        err.to_string().contains("more than a 1-byte LZ4 block"),
        "{err}"
    );
    assert_eq!(d.out.capacity(), 0);
    // The largest legal expansion still decodes: 1 MB of zeros.
    let zeros = vec![0u8; 1 << 20];
    let c = compress(Codec::Lz4, &zeros).unwrap();
    assert!(zeros.len() <= max_output(Codec::Lz4, c.len()));
    assert_eq!(dec(Codec::Lz4, &c, zeros.len()).unwrap(), zeros);
}

#[test]
fn decompress_at_appends_into_a_shared_buffer() {
    let mut d = Decompressor::default();
    let mut out = b"head".to_vec();
    for codec in Codec::ALL {
        let c = compress(codec, LOREM.as_bytes()).unwrap();
        let at = out.len();
        let n = d
            .decompress_at(
                codec,
                &c,
                524,
                DEFAULT_MAX_UNCOMPRESSED_SIZE,
                0,
                &mut out,
                at,
            )
            .unwrap();
        assert_eq!(&out[at..at + n], LOREM.as_bytes(), "{codec}");
    }
    assert_eq!(&out[..4], b"head");
    // Writing below the current length reuses the bytes already there.
    let c = compress(Codec::Lz4, b"hello").unwrap();
    let len = out.len();
    d.decompress_at(Codec::Lz4, &c, 5, 1024, 0, &mut out, 0)
        .unwrap();
    assert_eq!((&out[..9], out.len()), (&b"helloorem"[..], len));
}

#[test]
fn wrong_sizes_and_garbage_are_errors() {
    let lorem_lz4 = hex::decode(LZ4).unwrap();
    for codec in [Codec::Lz4, Codec::Zlib, Codec::Zstd, Codec::Snappy] {
        let good = compress(codec, LOREM.as_bytes()).unwrap();
        assert!(dec(codec, &good, 523).is_err(), "{codec} short");
        assert!(dec(codec, &good, 525).is_err(), "{codec} long");
        assert!(
            dec(codec, &[0xde, 0xad, 0xbe, 0xef], 100).is_err(),
            "{codec} garbage"
        );
    }
    assert!(dec(Codec::Lz4, &lorem_lz4[..100], 524).is_err());
}

#[test]
fn codec_names_parse() {
    assert_eq!("ZSTD".parse::<Codec>().unwrap(), Codec::Zstd);
    assert!("gzip".parse::<Codec>().is_err());
}
