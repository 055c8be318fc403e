package advice

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// MinCommandSimilarity is how alike two commands must be, as the share of their
// words they have in common (Jaccard), for two jobs to count as similar.
const MinCommandSimilarity = 0.5

// Similar picks from candidates the earlier runs like job: succeeded, in the same
// project, on the same image, running the same program with a similar command line.
// They come newest first, at most limit.
func Similar(job models.Job, candidates []models.Job, limit int) []models.Job {
	words := commandWords(job.Command)
	var out []models.Job
	for _, c := range candidates {
		if c.ID == job.ID || c.State != models.JobSucceeded || c.ProjectID != job.ProjectID || !sameImage(job, c) {
			continue
		}
		other := commandWords(c.Command)
		if len(words) == 0 || len(other) == 0 || words[0] != other[0] || jaccard(words, other) < MinCommandSimilarity {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func sameImage(a, b models.Job) bool {
	if a.ImageID != nil && b.ImageID != nil {
		return *a.ImageID == *b.ImageID
	}
	return a.ImageRef == b.ImageRef
}

// commandWords splits a job's command (a JSON array of strings) into words, with
// "--flag=value" counted as two.
func commandWords(command string) []string {
	var args []string
	if err := json.Unmarshal([]byte(command), &args); err != nil {
		args = strings.Fields(command)
	}
	var out []string
	for _, a := range args {
		for _, w := range strings.SplitN(a, "=", 2) {
			for _, f := range strings.Fields(w) {
				out = append(out, f)
			}
		}
	}
	return out
}

func jaccard(a, b []string) float64 {
	set := map[string]int{}
	for _, w := range a {
		set[w] |= 1
	}
	for _, w := range b {
		set[w] |= 2
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	return float64(both) / float64(len(set))
}
