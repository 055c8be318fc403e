package images

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Frameworks an image may declare.
var Frameworks = []string{"pytorch", "tensorflow", "jax", "cuda", "other"}

// Statuses an image may have.
var Statuses = []string{models.ImageCertified, models.ImageUncertified, models.ImageDeprecated}

// Service manages the catalog; every change is audited in the same transaction.
type Service struct {
	store *store.Store
	audit *audit.Log
}

// New returns the catalog service over st, recording changes in log.
func New(st *store.Store, log *audit.Log) *Service {
	return &Service{store: st, audit: log}
}

// Input is a new catalog entry as an admin describes it.
type Input struct {
	Name             string
	Reference        string
	Digest           string
	Framework        string
	FrameworkVersion string
	CUDAVersion      string
	MinDriver        string
	PythonVersion    string
	SizeMiB          int64
	PrePull          bool
	Description      string
}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	versionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+){0,3}$`)
)

// Validate checks every field and returns the first problem as a models.FieldError.
func (in Input) Validate() error {
	if !nameRE.MatchString(in.Name) {
		return models.Invalid("name", "must be 1-63 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	ref, err := ParseReference(in.Reference)
	if err != nil {
		return models.Invalid("reference", "%v", err)
	}
	if in.Digest != "" && !digestRE.MatchString(in.Digest) {
		return models.Invalid("digest", "must look like sha256:<hex>")
	}
	if in.Digest != "" && ref.Digest != "" && in.Digest != ref.Digest {
		return models.Invalid("digest", "differs from the digest in the reference")
	}
	if !slices.Contains(Frameworks, in.Framework) {
		return models.Invalid("framework", "must be one of %s", strings.Join(Frameworks, ", "))
	}
	for _, v := range []struct{ field, value string }{
		{"framework_version", in.FrameworkVersion}, {"cuda_version", in.CUDAVersion},
		{"min_driver", in.MinDriver}, {"python_version", in.PythonVersion},
	} {
		if v.value != "" && !versionRE.MatchString(v.value) {
			return models.Invalid(v.field, "must be a dotted version such as 12.4 (got %q)", v.value)
		}
	}
	if in.SizeMiB < 0 || in.SizeMiB > 1<<20 {
		return models.Invalid("size_mib", "must be between 0 and 1048576 MiB")
	}
	if len(in.Description) > 2000 {
		return models.Invalid("description", "must be at most 2000 characters")
	}
	return nil
}

// Add puts a new, uncertified image into the catalog.
func (s *Service) Add(ctx context.Context, in Input) (*models.Image, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	ref, _ := ParseReference(in.Reference)
	img := &models.Image{
		Name: in.Name, Reference: ref.String(), Digest: firstNonEmpty(in.Digest, ref.Digest),
		Framework: in.Framework, FrameworkVersion: in.FrameworkVersion, CUDAVersion: in.CUDAVersion,
		MinDriver: in.MinDriver, PythonVersion: in.PythonVersion, SizeMiB: in.SizeMiB,
		Status: models.ImageUncertified, PrePull: in.PrePull, Description: in.Description,
	}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateImage(ctx, img); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "image.created", ObjectType: "image", ObjectID: img.Name, Detail: img})
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, models.Invalid("name", "an image called %q exists already", in.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("add image %s: %w", in.Name, err)
	}
	return img, nil
}

// SetStatus certifies, un-certifies or deprecates an image. Running jobs are not touched;
// new submissions of a deprecated image are refused by the submission policy.
func (s *Service) SetStatus(ctx context.Context, name, status string) (*models.Image, error) {
	if !slices.Contains(Statuses, status) {
		return nil, models.Invalid("status", "must be certified, uncertified or deprecated")
	}
	return s.update(ctx, name, "image."+status, func(img *models.Image) any {
		from := img.Status
		img.Status = status
		return map[string]string{"from": from, "to": status}
	})
}

// SetPrePull marks an image for agents to pull before it is needed, or unmarks it.
func (s *Service) SetPrePull(ctx context.Context, name string, prePull bool) (*models.Image, error) {
	return s.update(ctx, name, "image.prepull_changed", func(img *models.Image) any {
		img.PrePull = prePull
		return map[string]bool{"pre_pull": prePull}
	})
}

// update reads an image, applies change, saves it and audits action, in one transaction.
func (s *Service) update(ctx context.Context, name, action string, change func(*models.Image) any) (*models.Image, error) {
	var img *models.Image
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if img, err = tx.ImageByName(ctx, name); err != nil {
			return err
		}
		detail := change(img)
		if err := tx.UpdateImage(ctx, img); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "image", ObjectID: name, Detail: detail})
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, models.Invalid("image", "no image called %q in the catalog", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", action, name, err)
	}
	return img, nil
}

// Catalog lists the images matching f, certified first.
func (s *Service) Catalog(ctx context.Context, f store.ImageFilter) ([]models.Image, error) {
	if err := checkFilter(f); err != nil {
		return nil, err
	}
	return s.store.ImagesMatching(ctx, f)
}

// checkFilter refuses a framework or status no image can have: a search for one would
// find nothing and not say why (a URL typed or kept from an older version).
func checkFilter(f store.ImageFilter) error {
	if f.Framework != "" && !slices.Contains(Frameworks, f.Framework) {
		return models.Invalid("framework", "%q is not a framework: one of %s (or empty for any)", f.Framework, strings.Join(Frameworks, ", "))
	}
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return models.Invalid("status", "%q is not an image status: one of %s (or empty for any)", f.Status, strings.Join(Statuses, ", "))
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
