package nodeagent

import (
	"reflect"
	"testing"
)

func TestScriptArgvFollowsTheShebangLikeTheKernel(t *testing.T) {
	for body, want := range map[string][]string{
		"#!/bin/bash\necho hi\n":             {"/bin/bash", "/s"},
		"#!/usr/bin/env python3\nprint(1)\n": {"/usr/bin/env", "python3", "/s"},
		"#! /bin/bash -l -e\n":               {"/bin/bash", "-l -e", "/s"}, // one argument: the rest of the line
		"#!/bin/sh\t-x\n":                    {"/bin/sh", "-x", "/s"},
		"#!/bin/bash\r\necho crlf\r\n":       {"/bin/bash", "/s"},
		"#!\necho no interpreter\n":          {"/bin/sh", "/s"},
		"echo no shebang\n":                  {"/bin/sh", "/s"},
		"#!/bin/sh":                          {"/bin/sh", "/s"},
	} {
		if got := scriptArgv("/s", body); !reflect.DeepEqual(got, want) {
			t.Errorf("scriptArgv(%q) = %q; want %q", body, got, want)
		}
	}
}
