package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gres.conf beside the config must agree with the NodeName lines' Gres=.
func TestGresConf(t *testing.T) {
	conf := "GresTypes=gpu,mps\nNodeName=gpu[001-002] CPUs=64 Gres=gpu:a100:8\nNodeName=cpu01 CPUs=32\n"
	for _, tc := range []struct {
		name, gres string
		err        string   // "" when it loads
		warnings   []string // substrings
	}{
		{"absent", "", "", []string{"GresTypes mps is not scheduled"}},
		{"agrees by files", "AutoDetect=nvml\nNodeName=gpu[001-002] Name=gpu Type=a100 File=/dev/nvidia[0-7]\n", "", nil},
		{"agrees by count, split", "NodeName=gpu001 Name=gpu Type=a100 Count=4\nNodeName=gpu001 Name=gpu Type=a100 Count=4\nNodeName=gpu002 Name=gpu Count=8 Cores=0-31\nName=mps Count=100\n", "",
			[]string{"gres.conf key Cores is not used", "Name=mps is not scheduled"}},
		{"too few", "NodeName=gpu002 Name=gpu Type=a100 File=/dev/nvidia[0-3]\n", "node gpu002 has Gres=gpu:a100:4 here, but its NodeName line says Gres=gpu:a100:8", nil},
		{"another type", "NodeName=gpu001 Name=gpu Type=h100 Count=8\n", "node gpu001 has Gres=gpu:h100:8 here", nil},
		{"a node without GPUs", "NodeName=cpu01 Name=gpu Count=1\n", "node cpu01 has Gres=gpu:1 here, but its NodeName line says no GPUs", nil},
		{"an undeclared node", "NodeName=gpu009 Name=gpu Count=8\n", "node gpu009 has no NodeName line", nil},
		// A line that names no GRES was skipped as an AutoDetect= line:
		// Slurm ignores it (NodeName=) or fails at its Count= (none).
		{"Count without Name", "NodeName=gpu[001-002] Count=8\n",
			"gres.conf:1: Count=8 without Name=: name the GRES, e.g. Name=gpu Count=8", nil},
		{"Type and Count without Name, no NodeName", "Type=a100 Count=8\n",
			"gres.conf:1: Type=a100 Count=8 without Name=: name the GRES, e.g. Name=gpu Type=a100 Count=8", nil},
		{"File without Name, beside AutoDetect", "NodeName=gpu001 AutoDetect=nvml File=/dev/nvidia[0-7]\n",
			"gres.conf:1: File=/dev/nvidia[0-7] without Name=", nil},
		{"Name empty", "NodeName=gpu001 Name= Count=8\n", "gres.conf:1: Name= is empty: name the GRES, e.g. Name=gpu", nil},
		{"NodeName alone", "NodeName=gpu001\n", "gres.conf:1: NodeName=gpu001 gives no GRES: add Name=gpu with Count= or File=, or remove the line", nil},
		{"a bad count without Name is one error", "NodeName=gpu001 Count=x\n", "gres.conf:1: Count=x without Name=", nil},
		// Count= beside File= counted alone, the devices unchecked: Slurm's
		// slurmd stops at it.
		{"Count and File disagree", "NodeName=gpu[001-002] Name=gpu Type=a100 Count=8 File=/dev/nvidia[0-3]\n",
			"gres.conf:1: Count=8, but File= names 4 devices: make them agree, or leave out Count=", nil},
		{"Count and File agree", "NodeName=gpu[001-002] Name=gpu Type=a100 Count=8 File=/dev/nvidia[0-7]\n", "", nil},
		{"AutoDetect alone", "AutoDetect=nvml\nNodeName=gpu001 AutoDetect=nvml\nNodeName=gpu[001-002] Name=gpu Type=a100 Count=8\n", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "slurm.conf")
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.gres != "" {
				if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(tc.gres), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Load(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "gres.conf:") {
					t.Fatalf("err = %v, want %q naming gres.conf's line", err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("err = %q, want one line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.warnings {
				if !strings.Contains(strings.Join(c.Warnings, "\n"), w) {
					t.Errorf("warnings %q lack %q", c.Warnings, w)
				}
			}
		})
	}
}

// A gres.conf reached through a link (phx dev links the one beside the
// config it was given) is named by its own path in errors.
func TestGresConfThroughLinkNamesTheFile(t *testing.T) {
	real, dev := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(real, "gres.conf"), []byte("NodeName=gpu009 Name=gpu Count=8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "gres.conf"), filepath.Join(dev, "gres.conf")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dev, "slurm.conf")
	if err := os.WriteFile(path, []byte("GresTypes=gpu\nNodeName=gpu001 Gres=gpu:8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := filepath.EvalSymlinks(filepath.Join(real, "gres.conf"))
	if err != nil {
		t.Fatal(err)
	}
	want := target + ":1: "
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want one naming %s", err, want)
	}
}
