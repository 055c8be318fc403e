package agentapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseDevicesReadsTheStoredList(t *testing.T) {
	got, err := ParseDevices(`[{"uuid":"GPU-a","milli":1000},{"uuid":"GPU-b","milli":1000,"memory_mib":20096,"mig_uuid":"MIG-1","mig_profile":"3g.20gb"}]`)
	want := []Device{{UUID: "GPU-a", Milli: 1000}, {UUID: "GPU-b", Milli: 1000, MemoryMiB: 20096, MIGUUID: "MIG-1", MIGProfile: "3g.20gb"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseDevices = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseDevices(""); got != nil || err != nil {
		t.Errorf("no devices: %+v, %v", got, err)
	}
	if _, err := ParseDevices(`{"uuid":"GPU-a"}`); err == nil {
		t.Error("a stored object instead of a list is not refused")
	}
}

// What json.Marshal writes of a device list is read without encoding/json, and as
// encoding/json reads it.
func TestParseDevicesReadsWhatMarshalWritesItself(t *testing.T) {
	for _, devices := range [][]Device{
		{},
		{{UUID: "GPU-4dadf9b7-4b79-c996-f721-8b04dc993cd5", Milli: 1000, MemoryMiB: 81920}},
		{{UUID: "GPU-a", Milli: 250, MemoryMiB: 8192}, {UUID: "GPU-b", Milli: 1000, MIGUUID: "MIG-1", MIGProfile: "1g.10gb"}},
		{{UUID: "GPU-a", Milli: -1, MIGProfile: "7g.80gb"}, {UUID: "", Milli: 0}},
	} {
		stored, err := json.Marshal(devices)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := devicesAsWritten(string(stored))
		if !ok || !reflect.DeepEqual(got, devices) {
			t.Errorf("%s: read %+v, %v; want %+v without encoding/json", stored, got, ok, devices)
		}
	}
}

// Whatever is not as json.Marshal writes it is left to encoding/json: a space, a field
// out of order or twice, an escape, a fraction, a name in capitals.
func TestParseDevicesLeavesTheRestToEncodingJSON(t *testing.T) {
	for _, stored := range []string{
		`[ {"uuid":"GPU-a","milli":1000}]`,
		`[{"milli":1000,"uuid":"GPU-a"}]`,
		`[{"uuid":"GPU-a","milli":1000,"memory_mib":1,"memory_mib":2}]`,
		`[{"uuid":"GPU-\u0061","milli":1000}]`,
		`[{"uuid":"GPU-é","milli":1000}]`,
		`[{"uuid":"GPU-a","milli":1e3}]`,
		`[{"uuid":"GPU-a","milli":01}]`,
		`[{"UUID":"GPU-a","milli":1000}]`,
		`[{"uuid":"GPU-a","milli":1000}] `,
		`[{"uuid":"GPU-a","milli":1000},]`,
		`null`,
	} {
		if got, ok := devicesAsWritten(stored); ok {
			t.Errorf("%s read as %+v without encoding/json", stored, got)
		}
	}
	if got, err := ParseDevices(`[{"uuid":"GPU-\u0061","milli":1000, "memory_mib":5}]`); err != nil || !reflect.DeepEqual(got, []Device{{UUID: "GPU-a", Milli: 1000, MemoryMiB: 5}}) {
		t.Errorf("an escape and a space: %+v, %v", got, err)
	}
}

// devicesAsWritten reads nothing differently from encoding/json: where it takes the
// text, encoding/json reads the same devices from it.
func FuzzParseDevices(f *testing.F) {
	for _, seed := range []string{
		`[]`, `[{"uuid":"GPU-a","milli":1000}]`,
		`[{"uuid":"GPU-b","milli":1000,"memory_mib":20096,"mig_uuid":"MIG-1","mig_profile":"3g.20gb"},{"uuid":"GPU-c","milli":-0}]`,
		`[{"uuid":"GPU-a","milli":9223372036854775808}]`, `[{"uuid":"x","milli":1,"mig_profile":"a"}]x`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, stored string) {
		got, ok := devicesAsWritten(stored)
		if !ok {
			return
		}
		var want []Device
		if err := json.Unmarshal([]byte(stored), &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: read %+v; encoding/json reads %+v, %v", stored, got, want, err)
		}
	})
}

// BenchmarkParseDevices reads an eight-GPU allocation's devices, and the same through
// encoding/json alone in the same run.
func BenchmarkParseDevices(b *testing.B) {
	devices := make([]Device, 8)
	for i := range devices {
		devices[i] = Device{UUID: "GPU-4dadf9b7-4b79-c996-f721-8b04dc993cd" + string(rune('0'+i)), Milli: 1000, MemoryMiB: 81920}
	}
	stored, err := json.Marshal(devices)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ParseDevices", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseDevices(string(stored)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var out []Device
			if err := json.Unmarshal(stored, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
