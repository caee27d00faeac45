package delta

import "testing"

// Two tables whose configurations would read alike with their entries
// only joined by a separator keep their own properties.
func TestConfigurationsThatJoinAlikeHaveTheirOwnKeys(t *testing.T) {
	confs := []map[string]string{
		{"delta.logRetentionDuration": "interval 30 days", "delta.deletedFileRetentionDuration": "interval 30 days"},
		{"delta.deletedFileRetentionDuration": "interval 30 days\x00delta.logRetentionDuration\x00interval 30 days"},
		{"delta.deletedFileRetentionDuration\x00interval 30 days": "delta.logRetentionDuration\x00interval 30 days"},
		{"a": "b"}, {"ab": ""}, {"a": "", "b": ""}, {},
	}
	seen := map[string]int{}
	for i, c := range confs {
		k := configurationKey(c)
		if j, ok := seen[k]; ok {
			t.Errorf("configurations %d %q and %d %q have one key", j, confs[j], i, c)
		}
		seen[k] = i
	}
	if configurationKey(map[string]string{"x": "1", "y": "2"}) != configurationKey(map[string]string{"y": "2", "x": "1"}) {
		t.Error("one configuration, two keys")
	}
}
