package dispatch

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// Prefixes make a leaked secret recognisable by secret scanners and people.
const (
	joinTokenPrefix  = "gjt_"
	credentialPrefix = "gnc_"
	// JobTokenPrefix starts every job token (GANTRY_JOB_TOKEN).
	JobTokenPrefix = "gjb_"
)

// newSecret returns prefix followed by 128 random bits.
func newSecret(prefix string) string { return prefix + rand.Text() }

// hashSecret is what the database keeps of a token or credential.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
