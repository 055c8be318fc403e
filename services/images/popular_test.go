package images_test

import (
	"maps"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/images"
)

// Popular keeps the images at least PopularAtLeast jobs ran in, the PopularTop most used
// (ties by name), and never a deprecated or built-in one.
func TestPopular(t *testing.T) {
	t.Parallel()
	var imgs []models.Image
	uses := map[int64]int{}
	add := func(name string, jobs int, change ...func(*models.Image)) int64 {
		img := models.Image{ID: int64(len(imgs) + 1), Name: name, Reference: "reg.example/" + name + ":1", Status: models.ImageCertified}
		for _, c := range change {
			c(&img)
		}
		imgs = append(imgs, img)
		uses[img.ID] = jobs
		return img.ID
	}
	few := add("few", images.PopularAtLeast-1)
	just := add("just", images.PopularAtLeast)
	old := add("old", 100, func(i *models.Image) { i.Status = models.ImageDeprecated })
	builtin := add("plain", 100, func(i *models.Image) { i.Builtin, i.Reference = true, "" })
	most := add("most", 50)
	tieB := add("tie-b", 20)
	tieA := add("tie-a", 20)
	third := add("third", 30)
	uncertified := add("own", 10, func(i *models.Image) { i.Status = models.ImageUncertified })

	got := images.Popular(imgs, uses)
	want := map[int64]int{most: 50, third: 30, tieA: 20, tieB: 20, uncertified: 10}
	if !maps.Equal(got, want) {
		t.Errorf("Popular = %v, want %v (of few %d, just %d, old %d, builtin %d)", got, want, few, just, old, builtin)
	}
	if got := images.Popular(imgs[:2], uses); !maps.Equal(got, map[int64]int{just: images.PopularAtLeast}) {
		t.Errorf("Popular of few and just = %v, want just alone", got)
	}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if since := images.PopularSince(now); !since.Equal(now.AddDate(0, 0, -7)) {
		t.Errorf("PopularSince = %s, want a week before", since)
	}
}
