package io.pulsarentries.realpulsar;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.util.Base64;
import java.util.Map;
import org.apache.pulsar.client.api.CryptoKeyReader;
import org.apache.pulsar.client.api.EncryptionKeyInfo;

/** The end-to-end encryption keys of the encrypted topic: made by produce, found again by truth. */
final class CorpusKeys {
    private CorpusKeys() {}

    /** The RSA pair of the encrypted topic, as PEM files in the working directory (truth decrypts with it). */
    static final String PUBLIC_PEM = "corpus-rsa.pub.pem";
    static final String PRIVATE_PEM = "corpus-rsa.pem";

    /** The end-to-end encryption keys; null until produce made them or truth found them. */
    static CryptoKeyReader keys;

    static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    /** A fresh RSA pair, written to {@code dir}: the public key as X.509, the private one as PKCS#1 (what
     * Pulsar's MessageCryptoBc reads). */
    static CryptoKeyReader newKeys(File dir) throws Exception {
        KeyPairGenerator gen = KeyPairGenerator.getInstance("RSA");
        gen.initialize(2048);
        KeyPair pair = gen.generateKeyPair();
        byte[] pkcs1 = org.bouncycastle.asn1.pkcs.PrivateKeyInfo.getInstance(pair.getPrivate().getEncoded())
                .parsePrivateKey().toASN1Primitive().getEncoded();
        Files.writeString(new File(dir, PUBLIC_PEM).toPath(), pem("PUBLIC KEY", pair.getPublic().getEncoded()));
        Files.writeString(new File(dir, PRIVATE_PEM).toPath(), pem("RSA PRIVATE KEY", pkcs1));
        return storedKeys(dir);
    }

    /** The keys {@link #newKeys} wrote to {@code dir}, or null. */
    static CryptoKeyReader storedKeys(File dir) throws Exception {
        File pub = new File(dir, PUBLIC_PEM);
        File priv = new File(dir, PRIVATE_PEM);
        if (!pub.exists() || !priv.exists()) {
            return null;
        }
        byte[] pubBytes = Files.readAllBytes(pub.toPath());
        byte[] privBytes = Files.readAllBytes(priv.toPath());
        return new CryptoKeyReader() {
            @Override
            public EncryptionKeyInfo getPublicKey(String keyName, Map<String, String> metadata) {
                return new EncryptionKeyInfo(pubBytes, null);
            }

            @Override
            public EncryptionKeyInfo getPrivateKey(String keyName, Map<String, String> metadata) {
                return new EncryptionKeyInfo(privBytes, null);
            }
        };
    }
}
