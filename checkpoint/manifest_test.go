package checkpoint

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sumA = "ca978112ca1bbdcafac231b39a23dc4da786eff8146d4a68f4e1e5a9c7c4e0f5" // sha256("a")

func validManifest() Manifest {
	return Manifest{Version: ManifestVersion, Step: 4, Rank: 2, Created: time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC),
		Files: []File{
			{Path: "a", Size: 1, SHA256: sumA, Mode: 0o644},
			{Path: "b/c.bin", Size: 1, SHA256: sumA, Mode: 0o600},
		}}
}

func TestParseManifest(t *testing.T) {
	b, err := json.Marshal(validManifest())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseManifest(b); err != nil {
		t.Fatalf("a valid manifest: %v", err)
	}

	bad := map[string]func(*Manifest){
		"version 2":          func(m *Manifest) { m.Version = 2 },
		"negative step":      func(m *Manifest) { m.Step = -1 },
		"dot dot":            func(m *Manifest) { m.Files[0].Path = "../a" },
		"dot dot inside":     func(m *Manifest) { m.Files[1].Path = "b/../c.bin" },
		"absolute":           func(m *Manifest) { m.Files[0].Path = "/a" },
		"dot":                func(m *Manifest) { m.Files[0].Path = "./a" },
		"root":               func(m *Manifest) { m.Files[0].Path = "." },
		"empty":              func(m *Manifest) { m.Files[0].Path = "" },
		"double slash":       func(m *Manifest) { m.Files[1].Path = "b//c.bin" },
		"trailing slash":     func(m *Manifest) { m.Files[1].Path = "b/" },
		"nul":                func(m *Manifest) { m.Files[1].Path = "b/c\x00" },
		"marker":             func(m *Manifest) { m.Files[1].Path = Marker },
		"phalanx's name":     func(m *Manifest) { m.Files[1].Path = "b/.phx-x" },
		"the manifest":       func(m *Manifest) { m.Files[0].Path = ManifestFile },
		"negative size":      func(m *Manifest) { m.Files[0].Size = -1 },
		"short sum":          func(m *Manifest) { m.Files[0].SHA256 = sumA[:63] },
		"upper-case sum":     func(m *Manifest) { m.Files[0].SHA256 = strings.ToUpper(sumA) },
		"setuid":             func(m *Manifest) { m.Files[0].Mode = 0o4755 },
		"symlink mode":       func(m *Manifest) { m.Files[0].Mode |= 1 << 27 },
		"unsorted":           func(m *Manifest) { m.Files[0], m.Files[1] = m.Files[1], m.Files[0] },
		"listed twice":       func(m *Manifest) { m.Files[1].Path = "a" },
		"file and directory": func(m *Manifest) { m.Files[0].Path = "b" },
	}
	for name, change := range bad {
		m := validManifest()
		change(&m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseManifest(b); err == nil {
			t.Errorf("%s: accepted %s", name, b)
		}
	}
	for _, b := range []string{"", "null x", "[]", `{"version": "1"}`} {
		if _, err := parseManifest([]byte(b)); err == nil {
			t.Errorf("accepted %q", b)
		}
	}
}

func FuzzManifest(f *testing.F) {
	valid, _ := json.Marshal(validManifest())
	f.Add(valid)
	f.Add([]byte(`{"version":1,"step":0,"rank":0,"files":[],"created":"2025-01-01T00:00:00Z"}`))
	f.Add(bytes.Replace(valid, []byte(`"b/c.bin"`), []byte(`"../c.bin"`), 1))
	f.Add(bytes.Replace(valid, []byte(`"b/c.bin"`), []byte(`"/etc/passwd"`), 1))
	f.Add([]byte(`{"version":1,"files":null}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseManifest(b)
		if err != nil {
			return
		}
		for _, file := range m.Files {
			if !filepath.IsLocal(filepath.FromSlash(file.Path)) || filepath.Clean(file.Path) != file.Path {
				t.Fatalf("accepted a path that leaves the rank's directory: %q", file.Path)
			}
		}
		// What was accepted is written and read back the same.
		b1, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("accepted a manifest that cannot be written: %v", err)
		}
		m2, err := parseManifest(b1)
		if err != nil {
			t.Fatalf("the manifest written back is refused: %v\n%s", err, b1)
		}
		if b2, _ := json.Marshal(m2); !bytes.Equal(b1, b2) {
			t.Fatalf("round trip changed the manifest:\n%s\n%s", b1, b2)
		}
	})
}
