package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
)

var sshareOptions = []getopt.Option{
	{Long: "accounts", Short: 'A', HasArg: true, Usage: "only these accounts, comma-separated"},
	{Long: "all", Short: 'a', Usage: "every user (Phalanx has no per-user shares: no effect)"},
	{Long: "help", Usage: "show this help"},
	{Long: "noheader", Short: 'n', Usage: "no header lines"},
	{Long: "parsable", Short: 'p', Usage: "fields separated by |, with one after the last"},
	{Long: "parsable2", Short: 'P', Usage: "fields separated by |, none after the last"},
	versionOption,
}

func (k *commands) sshare() *ucli.Command {
	return slurmCommand("sshare", "list each account's usage and fair-share factor", k.runSshare)
}

// sshareView is how sshare prints.
type sshareView struct {
	accounts         []string // -A
	noHeader         bool
	parsable, notEnd bool // -p (a | after the last field), -P
	help             bool
}

func parseSshare(args []string) (*sshareView, error) {
	vals, operands, err := getopt.Parse(sshareOptions, args, getopt.Permute)
	if err != nil {
		return nil, err
	}
	if len(operands) > 0 {
		return nil, fmt.Errorf("unexpected argument %q: name accounts with -A", operands[0])
	}
	v := &sshareView{}
	for _, o := range vals {
		switch o.Name {
		case "accounts":
			v.accounts = append(v.accounts, splitList(o.Value)...)
		case "help":
			v.help = true
		case "noheader":
			v.noHeader = true
		case "parsable":
			v.parsable, v.notEnd = true, false
		case "parsable2":
			v.parsable, v.notEnd = true, true
		}
	}
	return v, nil
}

func (k *commands) runSshare(c *ucli.Context, args []string) error {
	if versionAsked(sshareOptions, args, getopt.Permute) {
		return k.printVersion()
	}
	v, err := parseSshare(args)
	if err != nil {
		return err
	}
	if v.help {
		fmt.Fprintf(k.sys.Stdout, "Usage: sshare [OPTIONS]\n\n%s", getopt.Usage(sshareOptions))
		return nil
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	var resp *phalanxv1.GetFairShareResponse
	err = cn.call(c.Context, func(ctx context.Context) (err error) {
		resp, err = cn.api.GetFairShare(ctx, &phalanxv1.GetFairShareRequest{})
		return err
	})
	if err != nil {
		return err
	}
	if resp.Weight == 0 { // nothing was computed: no table of zeros
		fmt.Fprintln(k.sys.Stderr, "sshare: fair share is off (PriorityWeightFairshare=0): no account's usage weighs in the priority")
		return nil
	}
	_, err = fmt.Fprint(k.sys.Stdout, FormatSshare(resp, v))
	return err
}

// sshareColumns are Slurm's sshare columns and widths.
var sshareColumns = []struct {
	name  string
	width int
}{{"Account", 20}, {"User", 10}, {"RawShares", 10}, {"NormShares", 11}, {"RawUsage", 11}, {"EffectvUsage", 13}, {"FairShare", 10}}

// FormatSshare prints the fair share as Slurm's sshare does: a root line
// with all the usage, then each account, one space in, under it; the jobs
// of a user without --account have a line with the user and no account.
func FormatSshare(resp *phalanxv1.GetFairShareResponse, v *sshareView) string {
	var total int64
	for _, a := range resp.Accounts {
		total += a.RawUsage
	}
	rootUsage := "0.000000"
	if total > 0 {
		rootUsage = "1.000000"
	}
	rows := [][]string{{"root", "", "", "0.000000", fmt.Sprint(total), rootUsage, ""}}
	for _, a := range resp.Accounts {
		if len(v.accounts) > 0 && !slices.Contains(v.accounts, a.Account) {
			continue
		}
		rows = append(rows, []string{" " + a.Account, a.User, fmt.Sprint(a.RawShares), fmt.Sprintf("%.6f", a.NormShares),
			fmt.Sprint(a.RawUsage), fmt.Sprintf("%.6f", a.EffectiveUsage), fmt.Sprintf("%.6f", a.FairShare)})
	}
	var b strings.Builder
	// line prints fields |-separated (-p, -P) or in sshare's columns: the
	// account and user left-aligned, the numbers right, cut to width.
	line := func(fields []string) {
		var l strings.Builder
		for i, f := range fields {
			switch {
			case v.parsable:
				l.WriteString(f)
				if !v.notEnd || i < len(fields)-1 {
					l.WriteByte('|')
				}
				continue
			case i > 0:
				l.WriteByte(' ')
			}
			l.WriteString(pad(f, sshareColumns[i].width, i >= 2))
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	if !v.noHeader {
		names, dashes := make([]string, len(sshareColumns)), make([]string, len(sshareColumns))
		for i, c := range sshareColumns {
			names[i], dashes[i] = c.name, strings.Repeat("-", c.width)
		}
		line(names)
		if !v.parsable {
			line(dashes)
		}
	}
	for _, r := range rows {
		line(r)
	}
	return b.String()
}
