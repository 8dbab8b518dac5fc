package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

const tokenUsage = "write scontrol token [username=NAME] [lifespan=SECONDS]"

// token asks the controller for a token, as Slurm's scontrol token does,
// and prints it as a line to eval or paste: PHX_TOKEN=...
func (k *commands) token(c *ucli.Context, args []string) error {
	req, err := tokenRequest(args)
	if err != nil {
		return err
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	return cn.call(c.Context, func(ctx context.Context) error {
		resp, err := cn.api.CreateToken(ctx, req)
		if err == nil {
			fmt.Fprintf(k.sys.Stdout, "PHX_TOKEN=%s\n", resp.Token)
		}
		return err
	})
}

// tokenRequest reads "username=NAME lifespan=SECONDS", in any order.
func tokenRequest(args []string) (*phalanxv1.CreateTokenRequest, error) {
	req := &phalanxv1.CreateTokenRequest{}
	for _, a := range args {
		key, val, ok := strings.Cut(a, "=")
		switch strings.ToLower(key) {
		case "username":
			if !ok || val == "" {
				return nil, fmt.Errorf("username= needs a user name: %s", tokenUsage)
			}
			req.Username = val
		case "lifespan":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("lifespan=%s is not a positive number of seconds: %s", val, tokenUsage)
			}
			req.LifespanSeconds = n
		default:
			return nil, fmt.Errorf("invalid token option %q: %s", a, tokenUsage)
		}
	}
	return req, nil
}
