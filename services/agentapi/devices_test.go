package agentapi

import (
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
