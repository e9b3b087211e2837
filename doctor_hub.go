package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"agentmail/mcpclient"
)

// hubChecks are the doctor's checks of a hub, when $AGENTMAIL_URL names
// one: the commands then use neither tmux nor a local .agentmail/, so
// these take the place of the local checks. One call of list-recipients
// tells all three: the hub answers, it takes the token, and it knows
// which agent the caller is (the one marked is_current).
func hubChecks(ctx context.Context) []check {
	c, err := hubClient(0)
	if err != nil {
		return []check{problem("hub", err.Error(), "")}
	}
	defer c.Close()
	r, err := c.CallTool(ctx, "list-recipients", nil, 0)
	skipped := func(name string) check { return info(name, "not checked: the hub did not answer", "") }
	switch {
	case errors.Is(err, mcpclient.ErrToken) || errors.Is(err, mcpclient.ErrForbidden):
		return []check{ok("hub", reached(c)), problem("token", err.Error(), ""), skipped("agent")}
	case errors.Is(err, mcpclient.ErrUnreachable) || errors.Is(err, mcpclient.ErrCertificate) || errors.Is(err, mcpclient.ErrTooOld):
		return []check{problem("hub", err.Error(), ""), skipped("token"), skipped("agent")}
	case err != nil:
		return []check{ok("hub", reached(c)), ok("token", "accepted"), problem("agent", err.Error(), "")}
	}
	var list struct {
		Recipients []struct {
			Name      string `json:"name"`
			IsCurrent bool   `json:"is_current"`
		} `json:"recipients"`
	}
	json.Unmarshal(r.Structured, &list)
	for _, rc := range list.Recipients {
		if rc.IsCurrent {
			return []check{ok("hub", reached(c)), ok("token", "accepted"), ok("agent", fmt.Sprintf("the hub knows you as %q", rc.Name))}
		}
	}
	return []check{ok("hub", reached(c)), ok("token", "accepted"), problem("agent", "the hub does not mark any recipient as you", "update agentmail on the hub")}
}

// reached says which hub answered.
func reached(c *mcpclient.Client) string {
	s := c.Server()
	return fmt.Sprintf("%s answers (%s %s)", c.URL(), s.Name, s.Version)
}
