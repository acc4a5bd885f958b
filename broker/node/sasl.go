package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"weir/broker/metadata"
	"weir/broker/sasl"
)

// scramLookup finds a SCRAM credential in the current metadata.
func (n *Node) scramLookup(mechanism, user string) (sasl.ScramCredential, bool) {
	return sasl.MetadataStore(func() *metadata.Image {
		if n.meta == nil {
			return nil
		}
		return n.meta.Image()
	})(mechanism, user)
}

// saslServer builds the SASL side of a SASL listener.
func saslServer(name string, configs map[string]string, scram sasl.ScramStore, audit *sasl.Audit) (*sasl.Server, error) {
	sc, err := sasl.Parse(name, configs)
	if err != nil {
		return nil, err
	}
	return sasl.NewServer(sc, scram, audit)
}

// freshMetadata reports whether the node's metadata has not been written
// yet (a new data directory): --add-scram credentials apply then only.
func freshMetadata(cfg Config) bool {
	p := filepath.Join(cfg.DataDir, "controller")
	if cfg.Controller == nil {
		p = filepath.Join(cfg.DataDir, metadata.FileName)
	}
	_, err := os.Stat(p)
	return os.IsNotExist(err)
}

// addScram stores the --add-scram credentials (Config.AddScram).
func (n *Node) addScram(ctx context.Context) error {
	if len(n.cfg.AddScram) == 0 {
		return nil
	}
	alt, ok := n.meta.(metadata.ScramAlterer)
	if !ok {
		return fmt.Errorf("--add-scram: the metadata store cannot keep SCRAM credentials")
	}
	var changes []metadata.UserScramCredential
	for _, u := range n.cfg.AddScram {
		c := u.Credential
		changes = append(changes, metadata.UserScramCredential{Name: u.Name, Mechanism: c.Mechanism, Salt: c.Salt,
			Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey})
	}
	if err := alt.AlterScramCredentials(ctx, changes); err != nil {
		return fmt.Errorf("--add-scram: %w", err)
	}
	for _, c := range changes {
		n.lg.Info("SCRAM credential added (--add-scram, new data directory)", zap.String("user", c.Name), zap.String("mechanism", c.Mechanism))
	}
	return nil
}
