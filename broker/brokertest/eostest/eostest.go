package eostest

import (
	"os/exec"
	"path/filepath"

	"weir/internal/mvnpeer"
)

// Available reports why the Java peers cannot run here ("" when they can).
func Available() string {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (install Java 17 and Maven to run the Kafka client peers)"
		}
	}
	return ""
}

// Classpath builds the Java peers (java/) when needed and returns their
// classpath.
func Classpath() (string, error) {
	return mvnpeer.Project{Dir: filepath.Join(mvnpeer.SourceDir(), "java"), Launcher: "weir/eostest/TxnScenarios.class"}.Build()
}

// Java returns the java command line options of a Java peer on classpath
// cp (from Classpath) with heap heap and its class-data archive
// (internal/mvnpeer, cds.go), which the JVM writes when dump is set, no
// archive is there yet and it exits normally: share.Done(ok) must then
// follow its exit. The main class and its arguments follow.
func Java(cp, heap string, dump bool) (args []string, share *mvnpeer.Share) {
	share = mvnpeer.ShareArchive(cp, dump)
	return mvnpeer.JavaOptions(heap, cp, share), share
}
