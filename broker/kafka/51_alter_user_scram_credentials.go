package kafka

// AlterUserScramCredentials (key 51), version 0, as Kafka's
// ScramControlManager: per user, a user named twice in the request is
// DUPLICATE_RESOURCE, an empty name or an iteration count outside
// 4096..16384 UNACCEPTABLE_CREDENTIAL, an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM, the removal of a credential that does not
// exist RESOURCE_NOT_FOUND. The client sends the salt and the salted
// password; the broker keeps the salt, the iterations, the stored key and
// the server key (broker/sasl.CredentialFromSaltedPassword) in the
// replicated metadata, never the salted password. It needs ALTER on the
// cluster (else CLUSTER_AUTHORIZATION_FAILED for every user named).

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
	"weir/broker/sasl"
)

func init() { register(kmsg.AlterUserSCRAMCredentials.Int16(), 0, 0, handleAlterUserSCRAMCredentials) }

func handleAlterUserSCRAMCredentials(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	img := s.cfg.Metadata.Image()
	if !s.authorizeCluster(r, acl.OpAlter) {
		// Kafka: every user named gets CLUSTER_AUTHORIZATION_FAILED.
		seen := map[string]bool{}
		add := func(name string) {
			if !seen[name] {
				seen[name] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = name, kerr.ClusterAuthorizationFailed.Code
				resp.Results = append(resp.Results, res)
			}
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
		return resp, nil
	}
	var order []string
	errs := map[string]*kafkaError{}
	valid := map[string]bool{}
	changes := map[string]metadata.UserScramCredential{}
	note := func(name string, ke *kafkaError, c *metadata.UserScramCredential) {
		if _, bad := errs[name]; bad {
			return
		}
		if !valid[name] {
			order = append(order, name)
		}
		if valid[name] {
			delete(valid, name)
			delete(changes, name)
			errs[name] = kafkaErr(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
			return
		}
		if ke != nil {
			errs[name] = ke
			return
		}
		valid[name], changes[name] = true, *c
	}
	// The request aliases the read buffer: names that go into the
	// metadata are copied.
	for _, d := range req.Deletions {
		d.Name = strings.Clone(d.Name)
		mech := sasl.ScramMechanismName(d.Mechanism)
		ke := checkScramUser(d.Name, mech)
		if ke == nil {
			if _, ok := img.ScramCredential(d.Name, mech); !ok {
				ke = kafkaErr(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			}
		}
		note(d.Name, ke, &metadata.UserScramCredential{Name: d.Name, Mechanism: mech, Delete: true})
	}
	for _, u := range req.Upsertions {
		u.Name = strings.Clone(u.Name)
		mech := sasl.ScramMechanismName(u.Mechanism)
		ke := checkScramUser(u.Name, mech)
		var c sasl.ScramCredential
		if ke == nil {
			if msg := sasl.CheckIterations(u.Iterations); msg != "" {
				ke = kafkaErr(kerr.UnacceptableCredential, "%s", msg)
			}
		}
		if ke == nil {
			var err error
			if c, err = sasl.CredentialFromSaltedPassword(mech, u.Salt, u.SaltedPassword, u.Iterations); err != nil {
				ke = kafkaErr(kerr.UnacceptableCredential, "%v", err)
			}
		}
		note(u.Name, ke, &metadata.UserScramCredential{Name: u.Name, Mechanism: mech, Salt: c.Salt,
			Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey})
	}
	var batch []metadata.UserScramCredential
	for _, name := range order {
		if valid[name] {
			batch = append(batch, changes[name])
		}
	}
	if len(batch) > 0 {
		alt, ok := s.cfg.Metadata.(metadata.ScramAlterer)
		var err error
		if !ok {
			err = errors.New("the metadata store cannot keep SCRAM credentials")
		} else {
			err = alt.AlterScramCredentials(r.Ctx, batch)
		}
		if err != nil {
			ke := kafkaErr(kerr.UnknownServerError, "%v", err)
			if errors.Is(err, metadata.ErrUnknownScramCredential) {
				ke = kafkaErr(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			}
			for _, c := range batch {
				errs[c.Name] = ke
			}
		} else {
			for _, c := range batch {
				s.logAdminChange("SCRAM credential changed", r, zap.String("user", c.Name), zap.String("mechanism", c.Mechanism), zap.Bool("deleted", c.Delete))
			}
		}
	}
	for _, name := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = name
		if ke := errs[name]; ke != nil {
			res.ErrorCode, res.ErrorMessage = ke.code, ke.msgPtr()
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// checkScramUser is Kafka's validateScramUsernameAndMechanism.
func checkScramUser(name, mechanism string) *kafkaError {
	if name == "" {
		return kafkaErr(kerr.UnacceptableCredential, "Username must not be empty")
	}
	if mechanism == "" {
		return kafkaErr(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return nil
}
