package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// adminClient talks to the pipeline API of a running weir run (its
// admin listener): weir tap and weir top.
type adminClient struct {
	base string
	hc   *http.Client
	// auth is user:password for basic auth (WEIR_ADMIN_BASIC_AUTH), so
	// the password is never a command-line argument.
	auth string
}

func addAdminFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "admin-addr", DefaultRunAdminAddr,
		"weir run's admin listener: host:port or http(s)://host:port (basic auth from $WEIR_ADMIN_BASIC_AUTH=user:password)")
}

func newAdminClient(addr string) *adminClient {
	return &adminClient{base: adminURL(addr), hc: &http.Client{}, auth: os.Getenv("WEIR_ADMIN_BASIC_AUTH")}
}

// do sends a request and returns the response of a 2xx answer; any other
// answer is an error carrying the API's message.
func (c *adminClient) do(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	if user, pass, ok := strings.Cut(c.auth, ":"); ok {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("weir run's admin listener at %s: %w (is weir run running with this --admin-addr?)", c.base, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && (e.Error != "" || e.Message != "") {
		msg = e.Error + e.Message
	}
	return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
}

// getJSON decodes the answer of a GET into v.
func (c *adminClient) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}
