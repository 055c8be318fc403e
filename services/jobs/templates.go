package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/strictjson"
)

// Template is a job spec saved under a name in a project, to submit again in one step.
type Template struct {
	ID          int64
	Name        string
	Project     string
	Spec        Spec
	CreatedByID int64
	CreatedBy   string // the username of who saved it
	CreatedAt   time.Time
}

// NotYoursError refuses a change to a template by someone who neither saved it nor
// manages its project.
type NotYoursError struct{ Template, SavedBy string }

func (e *NotYoursError) Error() string {
	return fmt.Sprintf("template %s was saved by %s: only they, a team lead of the project or an admin may change it", e.Template, e.SavedBy)
}

// MaxTemplateNameLen bounds a template's name.
const MaxTemplateNameLen = 64

var templateNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// validTemplateName checks a name that appears in URLs and on the command line.
func validTemplateName(name string) error {
	switch {
	case name == "":
		return models.Invalid("name", "is required: name the template, e.g. nightly-eval")
	case len(name) > MaxTemplateNameLen || !templateNameRE.MatchString(name):
		return models.Invalid("name", "%q is not a template name: 1 to %d letters, digits, '.', '_' and '-', starting with a letter or digit", name, MaxTemplateNameLen)
	}
	return nil
}

// TemplateBody is the body of POST /api/v1/projects/{project}/templates.
type TemplateBody struct {
	Name string          `json:"name"`
	Spec json.RawMessage `json:"spec"`
}

// ParseTemplate decodes a template body strictly, its spec as Parse does; a bad spec
// field is named under spec ("spec.resources.gpus").
func ParseTemplate(r io.Reader) (string, Spec, error) {
	var b TemplateBody
	body, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return "", Spec{}, fmt.Errorf("read template: %w", err)
	}
	if len(body) > MaxSpecBytes {
		return "", Spec{}, models.Invalid("body", "is over %d bytes", MaxSpecBytes)
	}
	if err := strictjson.Check(body, &b); err != nil {
		return "", Spec{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return "", Spec{}, models.Invalid(strings.Trim(f, `"`), `is not a field of a template: send {"name": "…", "spec": {a job spec}}`)
		}
		return "", Spec{}, decodeError(err)
	}
	if dec.More() {
		return "", Spec{}, models.Invalid("body", "holds more than one JSON object")
	}
	if len(b.Spec) == 0 || string(b.Spec) == "null" {
		return b.Name, Spec{}, models.Invalid("spec", "is required: the job spec to save, as POST /api/v1/jobs takes it")
	}
	spec, err := Parse(bytes.NewReader(b.Spec))
	return b.Name, spec, underSpec(err)
}

// underSpec names a spec's FieldError as a field of spec.
func underSpec(err error) error {
	var fe *models.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	field := "spec"
	if fe.Field != "body" {
		field += "." + fe.Field
	}
	return &models.FieldError{Field: field, Message: fe.Message}
}

// Templates returns the templates of project, by name.
func (s *Service) Templates(ctx context.Context, project *models.Project) ([]Template, error) {
	rows, err := s.store.JobTemplates(ctx, project.ID)
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	out := make([]Template, 0, len(rows))
	for i := range rows {
		t, err := s.template(ctx, project, &rows[i], names)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	// Sorted here: SQLite and PostgreSQL collate names differently.
	slices.SortFunc(out, func(a, b Template) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// TemplateByName returns the template of project called name; a missing one is
// store.ErrNotFound.
func (s *Service) TemplateByName(ctx context.Context, project *models.Project, name string) (*Template, error) {
	row, err := s.store.JobTemplateByName(ctx, project.ID, name)
	if err != nil {
		return nil, err
	}
	t, err := s.template(ctx, project, row, map[int64]string{})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// template reads a stored template; names remembers usernames across a list.
func (s *Service) template(ctx context.Context, project *models.Project, row *models.JobTemplate, names map[int64]string) (Template, error) {
	t := Template{ID: row.ID, Name: row.Name, Project: project.Name, CreatedByID: row.CreatedByID, CreatedAt: row.CreatedAt}
	if err := json.Unmarshal([]byte(row.Spec), &t.Spec); err != nil {
		return t, fmt.Errorf("job template %s of %s: spec: %w", row.Name, project.Name, err)
	}
	t.Spec.Project = project.Name
	name, ok := names[row.CreatedByID]
	if !ok {
		u, err := s.store.UserByID(ctx, row.CreatedByID)
		if err != nil {
			return t, fmt.Errorf("job template %s of %s: %w", row.Name, project.Name, err)
		}
		name, names[row.CreatedByID] = u.Username, u.Username
	}
	t.CreatedBy = name
	return t, nil
}

// SaveTemplate saves spec as the template name of project, by user. The spec is
// checked as a submission would be (a FieldError under "spec."); a name the project
// already has is a FieldError on "name". Nothing is submitted.
func (s *Service) SaveTemplate(ctx context.Context, user *models.User, project *models.Project, name string, spec Spec) (*Template, error) {
	name = strings.TrimSpace(name)
	if err := validTemplateName(name); err != nil {
		return nil, err
	}
	if spec.Project != "" && spec.Project != project.Name {
		return nil, models.Invalid("spec.project", "is %q, but the template is saved in project %s: leave it out or name %s", spec.Project, project.Name, project.Name)
	}
	spec.Project = project.Name
	if err := spec.Validate(); err != nil {
		return nil, underSpec(err)
	}
	// A template is read by everyone in its project, and saved into the audit log.
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		if spec.Env[k].IsSecret(k) {
			return nil, models.Invalid("spec.env."+k, "is secret, and a template keeps no secrets: leave it out and add it when you submit")
		}
	}
	if _, _, err := s.build(ctx, user, spec); err != nil {
		return nil, underSpec(err)
	}
	body, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode template %s: %w", name, err)
	}
	row := &models.JobTemplate{ProjectID: project.ID, Name: name, Spec: string(body), CreatedByID: user.ID}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if _, err := tx.JobTemplateByName(ctx, project.ID, name); err == nil {
			return duplicateTemplate(project, name)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.CreateJobTemplate(ctx, row); errors.Is(err, store.ErrConflict) {
			return duplicateTemplate(project, name)
		} else if err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "job_template.saved", ObjectType: "job_template", ObjectID: strconv.FormatInt(row.ID, 10),
			ProjectID: &project.ID, Detail: map[string]any{"name": name, "spec": spec}})
	})
	if err != nil {
		return nil, fmt.Errorf("save job template %s of %s: %w", name, project.Name, err)
	}
	return &Template{ID: row.ID, Name: name, Project: project.Name, Spec: spec, CreatedByID: user.ID, CreatedBy: user.Username, CreatedAt: row.CreatedAt}, nil
}

func duplicateTemplate(project *models.Project, name string) error {
	return models.Invalid("name", "project %s already has a template called %q: pick another name, or delete that one first", project.Name, name)
}

// RenameTemplate renames the template name of project to newName. Only who saved it
// may, unless anyones (the caller manages the project: a team lead, an admin):
// otherwise a *NotYoursError.
func (s *Service) RenameTemplate(ctx context.Context, user *models.User, anyones bool, project *models.Project, name, newName string) error {
	newName = strings.TrimSpace(newName)
	if err := validTemplateName(newName); err != nil {
		return err
	}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		row, err := s.changeable(ctx, tx, user, anyones, project, name)
		if err != nil {
			return err
		}
		if newName == row.Name {
			return models.Invalid("name", "is already %q: type the new name", newName)
		}
		if _, err := tx.JobTemplateByName(ctx, project.ID, newName); err == nil {
			return duplicateTemplate(project, newName)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.RenameJobTemplate(ctx, row.ID, newName); errors.Is(err, store.ErrConflict) {
			return duplicateTemplate(project, newName)
		} else if err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "job_template.renamed", ObjectType: "job_template", ObjectID: strconv.FormatInt(row.ID, 10),
			ProjectID: &project.ID, Detail: map[string]any{"name": newName, "before": row.Name}})
	})
	if err != nil {
		return fmt.Errorf("rename job template %s of %s: %w", name, project.Name, err)
	}
	return nil
}

// DeleteTemplate removes the template name of project, under the rule of RenameTemplate.
func (s *Service) DeleteTemplate(ctx context.Context, user *models.User, anyones bool, project *models.Project, name string) error {
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		row, err := s.changeable(ctx, tx, user, anyones, project, name)
		if err != nil {
			return err
		}
		if err := tx.DeleteJobTemplate(ctx, row.ID); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "job_template.deleted", ObjectType: "job_template", ObjectID: strconv.FormatInt(row.ID, 10),
			ProjectID: &project.ID, Detail: map[string]any{"name": row.Name, "spec": json.RawMessage(row.Spec)}})
	})
	if err != nil {
		return fmt.Errorf("delete job template %s of %s: %w", name, project.Name, err)
	}
	return nil
}

// changeable reads the template that user is about to change: store.ErrNotFound when
// there is none, a *NotYoursError when the user may not.
func (s *Service) changeable(ctx context.Context, tx *store.Store, user *models.User, anyones bool, project *models.Project, name string) (*models.JobTemplate, error) {
	row, err := tx.JobTemplateByName(ctx, project.ID, name)
	if err != nil {
		return nil, err
	}
	if row.CreatedByID != user.ID && !anyones {
		u, err := tx.UserByID(ctx, row.CreatedByID)
		if err != nil {
			return nil, err
		}
		return nil, &NotYoursError{Template: row.Name, SavedBy: u.Username}
	}
	return row, nil
}
