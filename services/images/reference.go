package images

import (
	"fmt"
	"regexp"
	"strings"
)

// Reference is a parsed container image reference: [registry/]repository[:tag][@digest].
type Reference struct {
	Registry   string
	Repository string
	Tag        string
	Digest     string
}

// The grammar of github.com/distribution/reference, restated.
var (
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	registryRE  = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$`)
	tagRE       = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE    = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$`)
)

// maxReferenceLen bounds what is stored and shown.
const maxReferenceLen = 512

// ParseReference checks s against the OCI reference grammar and splits it.
func ParseReference(s string) (Reference, error) {
	if s == "" {
		return Reference{}, fmt.Errorf("is empty: give an image such as nvcr.io/nvidia/pytorch:24.10-py3")
	}
	if len(s) > maxReferenceLen {
		return Reference{}, fmt.Errorf("is %d characters long; at most %d are allowed", len(s), maxReferenceLen)
	}
	var ref Reference
	rest := s
	if i := strings.Index(rest, "@"); i >= 0 {
		ref.Digest = rest[i+1:]
		rest = rest[:i]
		if !digestRE.MatchString(ref.Digest) {
			return Reference{}, fmt.Errorf("digest %q is malformed: want ALGORITHM:HEX such as sha256:3f5a…", ref.Digest)
		}
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 && !strings.Contains(rest[i:], "/") {
		ref.Tag = rest[i+1:]
		rest = rest[:i]
		if !tagRE.MatchString(ref.Tag) {
			return Reference{}, fmt.Errorf("tag %q is malformed: letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-'", ref.Tag)
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost" || strings.HasPrefix(parts[0], "[")) {
		ref.Registry = parts[0]
		parts = parts[1:]
		if !registryRE.MatchString(ref.Registry) {
			return Reference{}, fmt.Errorf("registry %q is malformed: want a host name with an optional :port", ref.Registry)
		}
	}
	for _, p := range parts {
		if !componentRE.MatchString(p) {
			return Reference{}, fmt.Errorf("repository part %q is malformed: lower-case letters, digits and single separators (. _ __ -)", p)
		}
	}
	ref.Repository = strings.Join(parts, "/")
	return ref, nil
}

// String renders the reference in canonical form.
func (r Reference) String() string {
	var b strings.Builder
	if r.Registry != "" {
		b.WriteString(r.Registry + "/")
	}
	b.WriteString(r.Repository)
	if r.Tag != "" {
		b.WriteString(":" + r.Tag)
	}
	if r.Digest != "" {
		b.WriteString("@" + r.Digest)
	}
	return b.String()
}
