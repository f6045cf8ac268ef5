//! kubeconfig files (`kubeconfig_file` in a `kubernetes_sd_config`): the API server and
//! credentials of the file's current context, turned into kubesd's own settings.
//!
//! Certificates and keys given inline (`*-data`, base64 PEM) are written to files,
//! because kubesd's TLS layer (`kubesd_actors::http`) reads PEM from files: each goes to a
//! directory only this process can read (created fresh, mode 0700), in a file of mode
//! 0600 named by a hash of its content, so loading the same kubeconfig again reuses it.
//! The files stay until the process ends; they hold what the kubeconfig already holds.
//!
//! A cluster's `proxy-url` is used as `proxy_url` (an `http://` proxy, through a CONNECT
//! tunnel). A user's `exec` credential plugin is read by `kubeconfig/exec.rs` and run as kubectl
//! runs it (`kubesd_actors::http::ExecSource`). Refused with an error naming the field:
//! `auth-provider`, the plugins compiled into old kubectl versions (gcp, azure, oidc),
//! which Kubernetes removed in favour of `exec` plugins.

mod exec;
mod file;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine;

use self::file::{Cluster, Context, File, User, find};
use crate::config::{BasicAuth, HttpClientConfig, Secret, TlsConfig};

/// Where a kubeconfig's current context points, in kubesd's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeconfigTarget {
    /// The API server URL (`clusters[].cluster.server`).
    pub api_server: String,
    /// How to authenticate and verify the server.
    pub http: HttpClientConfig,
    /// The current context's namespace (`default` when it names none): what
    /// `namespaces.own_namespace` means with this kubeconfig.
    pub namespace: String,
}

/// A kubeconfig kubesd cannot use, naming the file and what is missing or wrong.
#[derive(Debug, thiserror::Error)]
#[error("kubeconfig {path}: {problem}")]
pub struct KubeconfigError {
    /// The kubeconfig file.
    pub path: PathBuf,
    /// What is wrong, naming the context, cluster or user and field.
    pub problem: String,
}

/// Reads the kubeconfig at `path` and resolves its current context.
pub fn load_kubeconfig(path: &Path) -> Result<KubeconfigTarget, KubeconfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| KubeconfigError {
        path: path.to_path_buf(),
        problem: format!("cannot read: {e}"),
    })?;
    parse_kubeconfig(&text, path)
}

/// Resolves the current context of kubeconfig `text`, read from `path` (relative file
/// names in it are relative to `path`'s directory, as kubectl takes them).
pub fn parse_kubeconfig(text: &str, path: &Path) -> Result<KubeconfigTarget, KubeconfigError> {
    let fail = |problem: String| KubeconfigError {
        path: path.to_path_buf(),
        problem,
    };
    let file: File = serde_norway::from_str::<Option<File>>(text)
        .map_err(|e| fail(format!("not a valid kubeconfig: {e}")))?
        .unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new(""));
    let relative = |p: &PathBuf| {
        if p.is_relative() {
            dir.join(p)
        } else {
            p.clone()
        }
    };
    let default_user = User::default();
    let current = Current::of(&file, &default_user).map_err(fail)?;
    let (cluster, user) = (current.cluster, current.user);
    let proxy_url = current.check_cluster().map_err(fail)?;
    if user.auth_provider.is_some() {
        return Err(fail(format!(
            "{} is not supported by kubesd: auth-provider plugins were removed from \
             kubectl and client-go; use the provider's exec credential plugin \
             (gke-gcloud-auth-plugin, kubelogin), a token, tokenFile or client certificate",
            current.at_user("auth-provider")
        )));
    }
    let exec = user
        .exec
        .as_ref()
        .map(|value| exec::exec_config(value, &current.context.user, cluster, &relative))
        .transpose()
        .map_err(fail)?;
    let mut http = HttpClientConfig {
        tls_config: current.tls_config(&relative).map_err(fail)?,
        proxy_url,
        exec,
        ..HttpClientConfig::default()
    };
    current.credentials(&mut http, &relative).map_err(fail)?;
    Ok(KubeconfigTarget {
        namespace: crate::api::context_namespace(&current.context.namespace),
        api_server: cluster.server.clone(),
        http,
    })
}

/// The current context of a kubeconfig, with its cluster and user.
struct Current<'a> {
    context: &'a Context,
    cluster: &'a Cluster,
    user: &'a User,
}

impl<'a> Current<'a> {
    /// Finds them, or says which is missing. A context without a user is anonymous
    /// access (`default_user`), which kubectl allows.
    fn of(file: &'a File, default_user: &'a User) -> Result<Current<'a>, String> {
        if file.current_context.is_empty() {
            return Err("current-context is not set".into());
        }
        let context = find(&file.contexts, &file.current_context)
            .ok_or_else(|| format!("context {:?} is not in contexts", file.current_context))?;
        if context.cluster.is_empty() {
            return Err(format!(
                "context {:?} names no cluster",
                file.current_context
            ));
        }
        let cluster = find(&file.clusters, &context.cluster)
            .ok_or_else(|| format!("cluster {:?} is not in clusters", context.cluster))?;
        let user = if context.user.is_empty() {
            default_user
        } else {
            find(&file.users, &context.user)
                .ok_or_else(|| format!("user {:?} is not in users", context.user))?
        };
        Ok(Current {
            context,
            cluster,
            user,
        })
    }

    fn at_cluster(&self, field: &str) -> String {
        format!("clusters[{:?}].cluster.{field}", self.context.cluster)
    }

    fn at_user(&self, field: &str) -> String {
        format!("users[{:?}].user.{field}", self.context.user)
    }

    /// Checks the cluster's `server`, and returns its `proxy-url`, checked, if it has one.
    fn check_cluster(&self) -> Result<Option<String>, String> {
        let server = &self.cluster.server;
        if server.is_empty() {
            return Err(format!("{} is not set", self.at_cluster("server")));
        }
        if !(server.starts_with("https://") || server.starts_with("http://")) {
            return Err(format!(
                "{} {server:?} is not an http:// or https:// URL",
                self.at_cluster("server")
            ));
        }
        let proxy_url = self.cluster.proxy_url.clone().filter(|p| !p.is_empty());
        if let Some(p) = &proxy_url {
            crate::config::check_proxy_url(p)
                .map_err(|e| format!("{}: {e}", self.at_cluster("proxy-url")))?;
        }
        Ok(proxy_url)
    }

    /// The cluster's CA and TLS settings and the user's client certificate; inline data
    /// wins over a file, as in client-go.
    fn tls_config(&self, relative: &dyn Fn(&PathBuf) -> PathBuf) -> Result<TlsConfig, String> {
        let (cluster, user) = (self.cluster, self.user);
        let source = |data: &Option<String>, file: &Option<PathBuf>, at: String| {
            pem_source(data, file)
                .map_err(|e| format!("{at}: {e}"))?
                .map(|s| s.into_path(&relative))
                .transpose()
                .map_err(|e| format!("{at}: {e}"))
        };
        let tls = TlsConfig {
            insecure_skip_verify: cluster.insecure_skip_tls_verify,
            server_name: cluster.tls_server_name.clone().filter(|s| !s.is_empty()),
            ca_file: source(
                &cluster.certificate_authority_data,
                &cluster.certificate_authority,
                self.at_cluster("certificate-authority-data"),
            )?,
            cert_file: source(
                &user.client_certificate_data,
                &user.client_certificate,
                self.at_user("client-certificate-data"),
            )?,
            key_file: source(
                &user.client_key_data,
                &user.client_key,
                self.at_user("client-key-data"),
            )?,
            ..TlsConfig::default()
        };
        if tls.cert_file.is_some() != tls.key_file.is_some() {
            return Err(format!(
                "{} and {} must be set together",
                self.at_user("client-certificate"),
                self.at_user("client-key")
            ));
        }
        Ok(tls)
    }

    /// The user's own token, token file or basic auth into `http`. As client-go, these
    /// (and a client certificate) are used instead of the user's plugin, which then
    /// never runs.
    fn credentials(
        &self,
        http: &mut HttpClientConfig,
        relative: &dyn Fn(&PathBuf) -> PathBuf,
    ) -> Result<(), String> {
        let user = self.user;
        let token = user.token.clone().filter(|t| !t.is_empty());
        let has_basic = user.username.as_deref().is_some_and(|u| !u.is_empty())
            || user.password.as_deref().is_some_and(|p| !p.is_empty());
        if (token.is_some() || user.token_file.is_some()) && has_basic {
            return Err(format!(
                "{} and {} cannot both be set",
                self.at_user("token"),
                self.at_user("username/password")
            ));
        }
        match (token, &user.token_file) {
            // client-go prefers the token when both are given.
            (Some(token), _) => http.bearer_token = Secret(token),
            (None, Some(file)) => http.bearer_token_file = Some(relative(file)),
            (None, None) if has_basic => {
                http.basic_auth = Some(BasicAuth {
                    username: user.username.clone().unwrap_or_default(),
                    password: Secret(user.password.clone().unwrap_or_default()),
                    password_file: None,
                });
            }
            (None, None) => {}
        }
        let own = !http.bearer_token.0.is_empty()
            || http.bearer_token_file.is_some()
            || http.basic_auth.is_some()
            || http.tls_config.cert_file.is_some();
        if own {
            http.exec = None;
        }
        Ok(())
    }
}

/// Where a PEM comes from: inline (decoded) or a file.
enum PemSource {
    Inline(Vec<u8>),
    File(PathBuf),
}

impl PemSource {
    /// A file holding the PEM: the named one (made absolute by `relative`), or the
    /// inline data written to a private file.
    fn into_path(self, relative: &impl Fn(&PathBuf) -> PathBuf) -> std::io::Result<PathBuf> {
        match self {
            PemSource::File(p) => Ok(relative(&p)),
            PemSource::Inline(pem) => write_private(&pem),
        }
    }
}

/// The PEM a `*-data` / file pair gives, if any; inline data must be base64.
fn pem_source(data: &Option<String>, file: &Option<PathBuf>) -> Result<Option<PemSource>, String> {
    if let Some(data) = data.as_deref().filter(|d| !d.trim().is_empty()) {
        // kubectl writes it on one line; tolerate wrapped base64 too.
        let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
        let pem = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|e| format!("not valid base64: {e}"))?;
        return Ok(Some(PemSource::Inline(pem)));
    }
    Ok(file
        .as_ref()
        .filter(|f| !f.as_os_str().is_empty())
        .map(|f| PemSource::File(f.clone())))
}

/// Writes `content` to a file only this process's user can read, in this process's
/// private directory, and returns its path. The same content gets the same file.
fn write_private(content: &[u8]) -> std::io::Result<PathBuf> {
    use md5::{Digest, Md5};
    let dir = private_dir()?;
    let name: String = Md5::digest(content)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = dir.join(format!("{name}.pem"));
    if path.exists() {
        return Ok(path);
    }
    // Written under a temporary name and renamed, so a reader never sees half a file.
    let tmp = dir.join(format!("{name}.{}.tmp", fastrand::u64(..)));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(content)?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// This process's private directory for inline credentials, created on first use under
/// the system temp directory with a fresh random name (so nobody can have prepared it)
/// and mode 0700.
fn private_dir() -> std::io::Result<&'static Path> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    if let Some(dir) = DIR.get() {
        return Ok(dir);
    }
    let dir = std::env::temp_dir().join(format!(
        "kubesd-{}-{:016x}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&dir)?;
    // Another thread may have won the race; its directory is as good, and ours is empty.
    if DIR.set(dir.clone()).is_err() {
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(DIR.get().map(PathBuf::as_path).unwrap_or(Path::new("")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test's files.
    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "kubesd-kubeconfig-{test}-{}-{:x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn files_and_token_of_the_current_context() {
        let dir = temp_dir("files");
        let path = dir.join("config");
        let text = r#"
apiVersion: v1
kind: Config
preferences: {}
current-context: b
contexts:
- {name: a, context: {cluster: one, user: alice}}
- {name: b, context: {cluster: two, user: bob, namespace: web}}
clusters:
- {name: one, cluster: {server: "https://one:6443"}}
- name: two
  cluster:
    server: https://two:6443
    certificate-authority: certs/ca.crt
    tls-server-name: kubernetes.default
    extensions: [{name: x, extension: {}}]
users:
- {name: alice, user: {token: a-token}}
- name: bob
  user:
    token: bob-token
    client-certificate: /abs/bob.crt
    client-key: bob.key
"#;
        let t = parse_kubeconfig(text, &path).expect("resolves");
        assert_eq!(t.api_server, "https://two:6443");
        assert_eq!(t.namespace, "web", "the current context's");
        assert_eq!(t.http.bearer_token.expose(), "bob-token");
        let tls = &t.http.tls_config;
        assert_eq!(tls.ca_file, Some(dir.join("certs/ca.crt")));
        assert_eq!(tls.cert_file.as_deref(), Some(Path::new("/abs/bob.crt")));
        assert_eq!(tls.key_file, Some(dir.join("bob.key")));
        assert_eq!(tls.server_name.as_deref(), Some("kubernetes.default"));
        assert!(!tls.insecure_skip_verify);
        assert!(t.http.follow_redirects);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn inline_data_goes_to_private_files() {
        let text = format!(
            r#"
current-context: c
contexts: [{{name: c, context: {{cluster: k, user: u}}}}]
clusters: [{{name: k, cluster: {{server: "https://k:6443", certificate-authority-data: "{ca}", certificate-authority: ignored.crt}}}}]
users: [{{name: u, user: {{client-certificate-data: "{cert}", client-key-data: "{key}"}}}}]
"#,
            ca = b64(CA),
            cert = b64("CERT"),
            key = b64("KEY"),
        );
        let t = parse_kubeconfig(&text, Path::new("/nowhere/config")).expect("resolves");
        let tls = &t.http.tls_config;
        let ca = tls.ca_file.clone().expect("ca file");
        assert_eq!(std::fs::read_to_string(&ca).expect("ca written"), CA);
        let key = tls.key_file.clone().expect("key file");
        assert_eq!(std::fs::read_to_string(&key).expect("key written"), "KEY");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
            assert_eq!(mode(&key), 0o600);
            assert_eq!(mode(key.parent().expect("dir")), 0o700);
        }
        // The same content reuses its file.
        let again = parse_kubeconfig(&text, Path::new("/nowhere/config")).expect("resolves");
        assert_eq!(again.http.tls_config.key_file, Some(key));
    }

    #[test]
    fn basic_auth_and_token_file() {
        let basic = r#"
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "http://k:8080", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {username: admin, password: pw}}]
"#;
        let t = parse_kubeconfig(basic, Path::new("/d/config")).expect("resolves");
        let auth = t.http.basic_auth.expect("basic auth");
        assert_eq!(
            (auth.username.as_str(), auth.password.expose()),
            ("admin", "pw")
        );
        assert!(t.http.tls_config.insecure_skip_verify);

        let proxied = basic.replace(
            "insecure-skip-tls-verify: true",
            "insecure-skip-tls-verify: true, proxy-url: \"http://proxy:3128\"",
        );
        let t = parse_kubeconfig(&proxied, Path::new("/d/config")).expect("resolves");
        assert_eq!(t.http.proxy_url.as_deref(), Some("http://proxy:3128"));

        let file = basic.replace("{username: admin, password: pw}", "{tokenFile: tok}");
        let t = parse_kubeconfig(&file, Path::new("/d/config")).expect("resolves");
        assert_eq!(
            t.http.bearer_token_file.as_deref(),
            Some(Path::new("/d/tok"))
        );
    }

    #[test]
    fn exec_plugins_are_read_as_kubectl_reads_them() {
        // As `aws eks update-kubeconfig` writes it.
        let eks = r#"
apiVersion: v1
kind: Config
current-context: arn:aws:eks:eu-west-1:111122223333:cluster/prod
contexts:
- context: {cluster: "arn:aws:eks:eu-west-1:111122223333:cluster/prod", user: "arn:aws:eks:eu-west-1:111122223333:cluster/prod"}
  name: arn:aws:eks:eu-west-1:111122223333:cluster/prod
clusters:
- cluster: {server: "https://ABC.gr7.eu-west-1.eks.amazonaws.com"}
  name: arn:aws:eks:eu-west-1:111122223333:cluster/prod
users:
- name: arn:aws:eks:eu-west-1:111122223333:cluster/prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args: [--region, eu-west-1, eks, get-token, --cluster-name, prod, --role-arn, secret-arn]
      command: aws
      env:
      - {name: AWS_PROFILE, value: prod-secret-profile}
"#;
        let t = parse_kubeconfig(eks, Path::new("/home/me/.kube/config")).expect("resolves");
        let exec = t.http.exec.clone().expect("the plugin");
        assert_eq!(exec.user, "arn:aws:eks:eu-west-1:111122223333:cluster/prod");
        assert_eq!(exec.command, Path::new("aws"), "a bare name stays for PATH");
        assert_eq!(exec.args[3], "get-token");
        assert_eq!(exec.api_version, crate::config::ExecApiVersion::V1Beta1);
        assert_eq!(
            exec.interactive_mode,
            crate::config::InteractiveMode::IfAvailable,
            "v1beta1's default"
        );
        assert_eq!(exec.env[0].value.expose(), "prod-secret-profile");
        assert!(exec.cluster.is_none(), "no provideClusterInfo");
        let debug = format!("{:?}", t.http);
        assert!(!debug.contains("prod-secret-profile") && !debug.contains("secret-arn"));

        // A relative path with a slash is the kubeconfig's; a token of the user's own
        // wins over the plugin, as in client-go.
        let relative = eks.replace("command: aws", "command: bin/aws");
        let t = parse_kubeconfig(&relative, Path::new("/home/me/.kube/config")).expect("ok");
        let command = t.http.exec.expect("the plugin").command;
        assert_eq!(command, Path::new("/home/me/.kube/bin/aws"));
        let with_token = eks.replace("  user:\n", "  user:\n    token: own\n");
        let t = parse_kubeconfig(&with_token, Path::new("/k/config")).expect("ok");
        assert!(t.http.exec.is_none());
        assert_eq!(t.http.bearer_token.expose(), "own");
    }

    #[test]
    fn errors_name_the_file_and_the_missing_piece() {
        let ok = r#"
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://k:6443"}}]
users: [{name: u, user: {token: t}}]
"#;
        let cases = [
            (
                ok.replace("current-context: c", ""),
                "current-context is not set",
            ),
            (
                ok.replace("current-context: c", "current-context: x"),
                "context \"x\" is not in contexts",
            ),
            (
                ok.replace("cluster: k, user", "cluster: z, user"),
                "cluster \"z\" is not in clusters",
            ),
            (
                ok.replace("user: u}", "user: v}"),
                "user \"v\" is not in users",
            ),
            (
                ok.replace("server: \"https://k:6443\"", "server: \"\""),
                "clusters[\"k\"].cluster.server is not set",
            ),
            (
                ok.replace("https://k:6443", "k:6443"),
                "is not an http:// or https:// URL",
            ),
            (
                ok.replace("{token: t}", "{exec: {command: aws}}"),
                "users[\"u\"].user.exec.apiVersion is not set",
            ),
            (
                ok.replace(
                    "{token: t}",
                    "{exec: {command: aws, apiVersion: client.authentication.k8s.io/v1alpha1}}",
                ),
                "users[\"u\"].user.exec.apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported",
            ),
            (
                ok.replace(
                    "{token: t}",
                    "{exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}}",
                ),
                "users[\"u\"].user.exec.interactiveMode must be set",
            ),
            (
                ok.replace(
                    "{token: t}",
                    "{exec: {apiVersion: client.authentication.k8s.io/v1beta1}}",
                ),
                "users[\"u\"].user.exec.command is not set",
            ),
            (
                ok.replace(
                    "{token: t}",
                    "{exec: {command: a, apiVersion: client.authentication.k8s.io/v1beta1, env: [{value: x}]}}",
                ),
                "users[\"u\"].user.exec.env has an entry without a name",
            ),
            (
                ok.replace("{token: t}", "{auth-provider: {name: gcp}}"),
                "users[\"u\"].user.auth-provider is not supported by kubesd: auth-provider plugins were removed",
            ),
            (
                ok.replace("{token: t}", "{client-key: k.pem}"),
                "must be set together",
            ),
            (
                ok.replace("{token: t}", "{token: t, username: a}"),
                "cannot both be set",
            ),
            (
                ok.replace(
                    "{token: t}",
                    "{client-key-data: \"%%%\", client-certificate: c}",
                ),
                "users[\"u\"].user.client-key-data: not valid base64",
            ),
            (
                ok.replace(
                    "server: \"https://k:6443\"",
                    "server: \"https://k:6443\", proxy-url: \"socks5://p\"",
                ),
                "proxy-url: \"socks5://p\" is not an http:// URL",
            ),
            ("[".to_string(), "not a valid kubeconfig"),
        ];
        for (text, want) in cases {
            let err = parse_kubeconfig(&text, Path::new("/home/me/.kube/config"))
                .expect_err(want)
                .to_string();
            assert!(
                err.starts_with("kubeconfig /home/me/.kube/config: "),
                "{err}"
            );
            assert!(err.contains(want), "{err} (want {want})");
        }
    }
}
