package templates

import "strconv"

func itoa(n int) string { return strconv.Itoa(n) }

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// mib renders a size in MiB as a person reads it.
func mib(n int64) string {
	switch {
	case n <= 0:
		return "–"
	case n >= 1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " GiB"
	}
	return strconv.FormatInt(n, 10) + " MiB"
}

func statusVerb(status string) string {
	switch status {
	case "certified":
		return "Certify"
	case "deprecated":
		return "Deprecate"
	}
	return "Un-certify"
}

// compatLabel says a compatibility level in words, so colour is never the only signal.
func compatLabel(level string) string {
	switch level {
	case "full":
		return "✓ runs"
	case "minor":
		return "~ minor-compat"
	case "none":
		return "✗ driver too old"
	}
	return "? unknown"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// anyModel names a GPU model of a quota, "" being every model.
func anyModel(m string) string {
	if m == "" {
		return "any model"
	}
	return m
}

// gpuCount writes a number of GPUs with its noun: "1 GPU", "2.5 GPUs".
func gpuCount(n string) string {
	if n == "1" {
		return "1 GPU"
	}
	return n + " GPUs"
}

// share writes a share of one GPU as the submit form asks for it: 250 milli-GPU is "0.25".
func share(milli int64) string { return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
