package jobs

import (
	"bytes"
	"encoding/json"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/strictjson"
)

// Masked stands for a secret value wherever one would be shown.
const Masked = models.MaskedSecret

// EnvVar is one variable of a job's environment. In a spec's JSON it is a string, or
// {"value": "…", "secret": true} for a value that pages, API answers, job logs and the
// audit log never show (it reaches the job's processes only); "secret": false says that
// a name that looks secret (SecretName) is not.
type EnvVar struct {
	Value string
	// Secret is nil where the spec did not say: the name decides.
	Secret *bool
}

// Plain is a variable that is not secret, unless its name says so.
func Plain(value string) EnvVar { return EnvVar{Value: value} }

// Secret is a variable marked secret.
func Secret(value string) EnvVar {
	yes := true
	return EnvVar{Value: value, Secret: &yes}
}

// IsSecret says whether the variable called name is secret: as marked, else by its name.
func (v EnvVar) IsSecret(name string) bool {
	if v.Secret != nil {
		return *v.Secret
	}
	return SecretName(name)
}

// SecretName says whether a variable's name says its value is a secret, as
// HF_TOKEN, AWS_SECRET_ACCESS_KEY, WANDB_API_KEY or DB_PASSWORD do: the rule of
// models.SecretEnvName, which the audit log masks by too.
func SecretName(name string) bool { return models.SecretEnvName(name) }

type envObject struct {
	Value  *string `json:"value"`
	Secret *bool   `json:"secret"`
}

// MarshalJSON writes a string, or the object form when the spec said whether it is secret.
func (v EnvVar) MarshalJSON() ([]byte, error) {
	if v.Secret == nil {
		return json.Marshal(v.Value)
	}
	return json.Marshal(envObject{Value: &v.Value, Secret: v.Secret})
}

// UnmarshalJSON reads a string or {"value": "…", "secret": true|false}.
func (v *EnvVar) UnmarshalJSON(b []byte) error {
	*v = EnvVar{}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		return json.Unmarshal(b, &v.Value)
	}
	var o envObject
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	// Keys as written: encoding/json would take {"Value": …} for "value".
	if strictjson.Check(b, &o) != nil || dec.Decode(&o) != nil || o.Value == nil {
		return models.Invalid("env", `each value is a string, or {"value": "…", "secret": true} for a secret`)
	}
	v.Value, v.Secret = *o.Value, o.Secret
	return nil
}

// splitEnv parts env into the variables anyone who reads the job sees and the secret ones.
func splitEnv(env map[string]EnvVar) (plain, secret map[string]string) {
	for k, v := range env {
		if v.IsSecret(k) {
			if secret == nil {
				secret = map[string]string{}
			}
			secret[k] = v.Value
			continue
		}
		if plain == nil {
			plain = map[string]string{}
		}
		plain[k] = v.Value
	}
	return plain, secret
}
