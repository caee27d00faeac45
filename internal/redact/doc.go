// Package redact owns how a table URL is shown outside the process: in
// pages, JSON, log lines, metric labels and the errors a command prints.
//
// A table URL may carry credentials: userinfo (s3://user:pass@bucket/x) and
// query parameters (?access_key=..., an Azure SAS &sig=..., a presigned
// X-Amz-Signature=...). URL returns the URL with the userinfo replaced by
// REDACTED and the value of every credential-looking parameter replaced by
// REDACTED; Text does the same to every URL inside a line of free text (an
// error message, a log line); Writer applies Text to each write.
//
// The rule for a credential-looking parameter is one case-insensitive
// substring test on its (percent-decoded) name: a name containing any of
// "secret", "token", "key", "sig", "pass", "pwd", "cred", "auth" or "sas"
// is a credential (access_key, secret_key, session_token, sig,
// X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, password,
// account_key, sas_token...). Other parameters (endpoint, region, the SAS
// fields se, sp, sv) are kept, so the URL still says which table it is. The
// same test applies to key=value pairs of a fragment.
//
// Nothing here fails: a URL that does not parse keeps only its scheme and,
// when it looks like a plain bucket name, its host; the rest is cut.
//
// The package must not import anything of ours; it is a leaf that delta,
// policies, runner and the binary share.
package redact
