package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// randomSecret returns n random bytes, URL-safe base64 encoded.
func randomSecret(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never fails on supported platforms (it panics instead).
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// digest is how cookies and tokens are stored: their SHA-256, so a database dump grants nothing.
func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// randomPassword returns 26 characters of base32 (128 bits): easy to type from a printout.
func randomPassword() string { return rand.Text() }
