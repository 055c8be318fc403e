package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// format names the canonical encoding; a new encoding gets a new name, never a silent change.
const format = "gantry-audit-v1"

// Hash returns the hex SHA-256 of e's canonical encoding, which covers every field but
// Hash itself — PrevHash included, which is what chains the events.
func Hash(e *models.AuditEvent) string {
	var buf [512]byte
	sum := sha256.Sum256(canonical(buf[:0], e))
	return hex.EncodeToString(sum[:])
}

// canonical appends e's fields in a fixed order, each prefixed by its length, so that no
// two different events share an encoding (no field can bleed into the next).
func canonical(b []byte, e *models.AuditEvent) []byte {
	b = field(b, format)
	b = field(b, strconv.FormatInt(e.ID, 10))
	b = field(b, e.At.UTC().Format(time.RFC3339Nano))
	b = field(b, e.Actor)
	b = field(b, e.ActorType)
	b = field(b, e.Action)
	b = field(b, e.ObjectType)
	b = field(b, e.ObjectID)
	project := ""
	if e.ProjectID != nil {
		project = strconv.FormatInt(*e.ProjectID, 10)
	}
	b = field(b, project)
	b = field(b, e.Detail)
	b = field(b, e.SourceIP)
	b = field(b, e.RequestID)
	return field(b, e.PrevHash)
}

func field(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
