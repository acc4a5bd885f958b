package kafka

// ApiVersions (key 18), versions 0-4 (v4: features whose supported
// minimum is 0 are listed, KAFKA-17011/17492; features.go).
//
// The response lists every registered API key with the version range its
// NN_<api>.go file registered, so what is advertised is exactly what is
// served. A request at a version we do not serve gets UNSUPPORTED_VERSION
// with a v0 body (KIP-511; handled in conn.dispatch, before decoding).
// The key-18 response header never carries tagged fields, even at v3.
// v3 requests carry ClientSoftwareName/Version; they are not validated
// (Kafka answers INVALID_REQUEST for bad ones; clients never send them).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ApiVersions.Int16(), 0, 4, handleAPIVersions) }

func handleAPIVersions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiVersionKeys()
	setFeatures(resp)
	return resp, nil
}

// apiVersionKeys lists the registered keys and their version ranges.
func apiVersionKeys() []kmsg.ApiVersionsResponseApiKey {
	regs := registeredAPIs()
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(regs))
	for _, a := range regs {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		out = append(out, k)
	}
	return out
}
