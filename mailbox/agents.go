package mailbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// agentsFile lists the named agents: agents that are not tmux windows, such
// as one on another machine, each reaching the project's HTTP server with
// a token of its own. One JSON object a line; the file holds only a hash of
// each token, and is readable by its owner alone (0600). The earlier tool
// ignores the file.
const agentsFile = "agents.jsonl"

// NamedAgent is one named agent.
type NamedAgent struct {
	Name string `json:"name"`
	// TokenHash is the SHA-256 of the agent's token, in hex.
	TokenHash string    `json:"token_sha256"`
	AddedAt   time.Time `json:"added_at"`
}

// TokenPrefix starts every named agent's token, so that a token found in
// a file or a log is known for what it is.
const TokenPrefix = "amt_"

// AgentsPath returns the path of the file of named agents.
func (s *Store) AgentsPath() string { return filepath.Join(s.Root, dirName, agentsFile) }

// NamedAgents returns the named agents, sorted by name. A missing file is
// an empty list; a line that cannot be read is an error, since a token
// would be lost with it. The list returned is shared: do not change it.
func (s *Store) NamedAgents(ctx context.Context) ([]NamedAgent, error) {
	c, err := s.namedAgents(ctx)
	if err != nil {
		return nil, err
	}
	return c.list, nil
}

// NamedAgentOf returns the name of the named agent whose token is token,
// or "" when no agent has it. Only a token with TokenPrefix is looked up.
func (s *Store) NamedAgentOf(ctx context.Context, token string) (string, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return "", nil
	}
	c, err := s.namedAgents(ctx)
	if err != nil {
		return "", err
	}
	// A map lookup by the hash tells nothing of the tokens by its
	// timing: finding a token whose hash shares a prefix with one kept
	// is as hard as finding the token.
	return c.byHash[hashToken(token)], nil
}

// namedCache is what the named agents' file held when it was last read:
// the agents, and their names by the hashes of their tokens.
type namedCache struct {
	stamp  fs.FileInfo
	list   []NamedAgent
	byHash map[string]string
}

// namedAgents returns the named agents' file as it is now. It is read
// again only when it changed, so a removed agent's token is refused at
// its next request, and a look costs a stat otherwise: every send and
// every request with a token looks, and a hub may have many agents.
func (s *Store) namedAgents(ctx context.Context) (*namedCache, error) {
	stamp, _ := os.Stat(s.AgentsPath())
	s.namedMu.Lock()
	defer s.namedMu.Unlock()
	if c := s.named; c != nil && stamp != nil && c.stamp != nil && sameStamp(stamp, c.stamp) {
		return c, nil
	}
	list, err := s.readNamedAgents(ctx)
	if err != nil {
		return nil, err
	}
	c := &namedCache{stamp: stamp, list: list, byHash: make(map[string]string, len(list))}
	for _, a := range list {
		c.byHash[a.TokenHash] = a.Name
	}
	s.named = c
	return c, nil
}

// sameStamp reports whether a and b are one version of one file: the same
// inode (a rename replaces it), size and modification time.
func sameStamp(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// readNamedAgents reads the named agents' file.
func (s *Store) readNamedAgents(ctx context.Context) ([]NamedAgent, error) {
	data, err := readShared(ctx, s.AgentsPath())
	if err != nil {
		return nil, err
	}
	return parseAgents(s.AgentsPath(), data)
}

// parseAgents reads the lines of the agents file.
func parseAgents(path string, data []byte) ([]NamedAgent, error) {
	var list []NamedAgent
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var a NamedAgent
		if err := json.Unmarshal([]byte(line), &a); err != nil || ValidName(a.Name) != nil || len(a.TokenHash) != 2*sha256.Size {
			return nil, fmt.Errorf("%s: line %d is not a named agent; restore the file, or remove the line and add that agent again", path, i+1)
		}
		list = append(list, a)
	}
	slices.SortFunc(list, func(a, b NamedAgent) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// AddNamedAgent adds the agent name and returns its new token, which is
// nowhere else: only its hash is kept. taken, when it is not nil, is asked
// under the file's lock whether the name is another's already (a window,
// a person); its error refuses the name.
func (s *Store) AddNamedAgent(ctx context.Context, name string, taken func(string) error) (token string, err error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	token = TokenPrefix + rand.Text() + rand.Text()
	err = s.editAgents(ctx, func(list []NamedAgent) ([]NamedAgent, error) {
		if slices.ContainsFunc(list, func(a NamedAgent) bool { return SameMailbox(a.Name, name) }) {
			return nil, fmt.Errorf("an agent named %q exists already; remove it first to give it a new token", name)
		}
		if taken != nil {
			if err := taken(name); err != nil {
				return nil, err
			}
		}
		return append(list, NamedAgent{Name: name, TokenHash: hashToken(token), AddedAt: s.now().UTC()}), nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// RemoveNamedAgent removes the agent name: its token is refused from then
// on. Its mailbox stays.
func (s *Store) RemoveNamedAgent(ctx context.Context, name string) error {
	return s.editAgents(ctx, func(list []NamedAgent) ([]NamedAgent, error) {
		i := slices.IndexFunc(list, func(a NamedAgent) bool { return a.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no agent named %q (agentmail agent list shows them)", name)
		}
		return slices.Delete(list, i, i+1), nil
	})
}

// editAgents rewrites the agents file with what edit makes of its list,
// under the file's lock. The file is replaced by a rename, so a crash
// leaves the old list or the new one, never half of either.
func (s *Store) editAgents(ctx context.Context, edit func([]NamedAgent) ([]NamedAgent, error)) error {
	if err := realDir(s.Dir(), true); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	f, fi, err := openLockedContext(ctx, s.AgentsPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is readable by others (mode %v): make it 0600 (chmod 600)", s.AgentsPath(), fi.Mode().Perm())
	}
	data, err := readAll(f, fi)
	if err != nil {
		return err
	}
	list, err := parseAgents(s.AgentsPath(), data)
	if err != nil {
		return err
	}
	if list, err = edit(list); err != nil {
		return err
	}
	var b strings.Builder
	for _, a := range list {
		line, _ := json.Marshal(a)
		b.Write(line)
		b.WriteByte('\n')
	}
	return writeFileAtomic(s.AgentsPath(), []byte(b.String()), fi, true)
}

// hashToken is the hex SHA-256 of token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
