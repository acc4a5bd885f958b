package controller

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"weir/broker/metadata"
)

// MetaPropertiesFile is the file in the Raft directory holding the node's
// identity as Kafka's kafka-storage format writes it (version,
// cluster.id, node.id, directory.id): kafka-metadata-quorum add-controller
// reads the directory id there (the controller's metadata.log.dir).
const MetaPropertiesFile = "meta.properties"

// readProperties parses a Java properties file of key=value lines.
func readProperties(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("controller: %s: line %q is not key=value", path, line)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, sc.Err()
}

// ParseKafkaUUID parses a Kafka Uuid's string form (22 characters of
// URL-safe base64).
func ParseKafkaUUID(s string) (metadata.UUID, error) {
	var u metadata.UUID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("%q is not a Kafka Uuid (22 characters of URL-safe base64)", s)
	}
	copy(u[:], b)
	return u, nil
}

// newDirectoryID is a random directory id whose string form does not
// start with '-' (Kafka's Uuid.randomUuid avoids those: they read as
// options on command lines).
func newDirectoryID() metadata.UUID {
	for {
		u := metadata.NewUUID()
		if !strings.HasPrefix(u.String(), "-") {
			return u
		}
	}
}

// loadDirectoryID reads this node's directory id from meta.properties in
// dir, creating the file with a new id when there is none.
func loadDirectoryID(dir string, nodeID int32) (metadata.UUID, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	props, err := readProperties(path)
	switch {
	case err == nil:
		if id, ok := props["node.id"]; ok && id != strconv.Itoa(int(nodeID)) {
			return metadata.UUID{}, fmt.Errorf("controller: %s is of node %s, not node %d", path, id, nodeID)
		}
		if s, ok := props["directory.id"]; ok {
			u, err := ParseKafkaUUID(s)
			if err != nil {
				return u, fmt.Errorf("controller: %s: directory.id: %v", path, err)
			}
			return u, nil
		}
	case !os.IsNotExist(err):
		return metadata.UUID{}, fmt.Errorf("controller: reading %s: %w", path, err)
	}
	u := newDirectoryID()
	// Version 0 needs no cluster id; writeMetaProperties writes version
	// 1 once the cluster id is known.
	content := fmt.Sprintf("#\n#written by weir\nbroker.id=%d\ndirectory.id=%s\nversion=0\n", nodeID, u)
	if err := writeFileAtomic(path, content); err != nil {
		return metadata.UUID{}, err
	}
	return u, nil
}

// writeMetaProperties writes meta.properties version 1 (with the cluster
// id) once this node knows the cluster id.
func (n *Node) writeMetaProperties() {
	defer n.wg.Done()
	path := filepath.Join(n.cfg.Dir, MetaPropertiesFile)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if cid := n.Image().ClusterID(); cid != "" {
			if props, err := readProperties(path); err == nil && props["cluster.id"] == cid && props["version"] == "1" {
				return
			}
			content := fmt.Sprintf("#\n#written by weir\ncluster.id=%s\ndirectory.id=%s\nnode.id=%d\nversion=1\n", cid, n.dirID, n.cfg.NodeID)
			if err := writeFileAtomic(path, content); err != nil {
				n.log.Warn("writing meta.properties", zap.String("path", path), zap.Error(err))
			}
			return
		}
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err == nil {
		_, err = f.WriteString(content)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("controller: writing %s: %w", path, err)
	}
	return nil
}

// observerAddr is the Raft address of a node that is not in the voter
// list: the advertised address, else the listener's when it names a host.
func observerAddr(advertised string, ln net.Addr) (string, error) {
	a := advertised
	if a == "" {
		a = ln.String()
	}
	host, _, err := net.SplitHostPort(a)
	if err != nil {
		return "", fmt.Errorf("%w: controller address %q: %v", ErrBadVoters, a, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "", fmt.Errorf("%w: this node is not one of the voters and its controller listener %s names no host other controllers can reach: advertise one", ErrBadVoters, a)
	}
	return a, nil
}
