//! TLS on `tls-port`, with rustls: the server configuration built from
//! Redis's `tls-*` parameters (rebuilt when CONFIG SET changes one, so
//! certificates are reloaded without a restart; connections already
//! open keep theirs), and [`TlsStream`], a TLS connection over a tokio
//! socket.
//!
//! [`TlsStream`] is written here rather than taken from tokio-rustls:
//! a connection moves between workers at batch boundaries as its raw
//! socket plus state (see `balance`), and tokio-rustls offers no way to
//! rebuild its stream from a socket and a rustls connection. Moving a
//! TLS connection is moving the socket and the `ServerConnection`.

use std::io::{self, Read, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::config::TlsAuthClients;
use parking_lot::RwLock;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::config::Config;

/// The parameters that shape the server's TLS configuration: a CONFIG
/// SET of any of them rebuilds it.
pub const PARAMS: &[&str] = &[
    "tls-cert-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-auth-clients",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
];

/// The current TLS configuration, for connections accepted from now on.
#[derive(Default)]
pub struct Tls {
    current: RwLock<Option<Arc<ServerConfig>>>,
}

impl Tls {
    pub fn get(&self) -> Option<Arc<ServerConfig>> {
        self.current.read().clone()
    }

    /// Builds the configuration from `config` (when TLS is in use: a
    /// `tls-port`) and installs it; on error the old one stays.
    pub fn configure(&self, config: &Config) -> Result<(), String> {
        if config.settings().tls_port == 0 {
            return Ok(());
        }
        let built = build(config)?;
        *self.current.write() = Some(Arc::new(built));
        Ok(())
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The crypto provider with the cipher suites `tls-ciphers` and
/// `tls-ciphersuites` allow.
fn configured_provider(c: &Config) -> Result<Arc<rustls::crypto::CryptoProvider>, String> {
    let s = c.settings();
    let mut provider = (*provider()).clone();
    restrict_ciphers(&mut provider, &s.tls_ciphers, &s.tls_ciphersuites)?;
    Ok(Arc::new(provider))
}

/// The rustls server configuration for Redis's `tls-*` parameters.
pub fn build(c: &Config) -> Result<ServerConfig, String> {
    let s = c.settings();
    let cert_file = &s.tls_cert_file;
    let key_file = &s.tls_key_file;
    if cert_file.is_empty() || key_file.is_empty() {
        return Err(
            "Failed to load certificate: tls-cert-file and tls-key-file must be set".into(),
        );
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "Failed to load certificate: {cert_file}: no certificate"
        ));
    }
    let key = load_key(key_file, &s.tls_key_file_pass)?;

    let provider = configured_provider(c)?;
    let versions = protocols(&s.tls_protocols)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?;

    let auth = s.tls_auth_clients;
    let builder = if auth == TlsAuthClients::No {
        builder.with_no_client_auth()
    } else {
        let roots = load_roots(&s.tls_ca_cert_file, &s.tls_ca_cert_dir)?;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if auth == TlsAuthClients::Optional {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        let verifier = verifier
            .build()
            .map_err(|e| format!("Failed to configure CA certificate(s): {e}"))?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("Private key does not match the certificate: {e}"))?;
    config.ignore_client_order = s.tls_prefer_server_ciphers;
    if s.tls_session_caching {
        let size = s.tls_session_cache_size;
        // Redis's size 0 means no limit (OpenSSL's); a bound is kept.
        config.session_storage =
            ServerSessionMemoryCache::new(if size == 0 { 1 << 20 } else { size });
    } else {
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(config)
}

/// The rustls client configuration of a replica's link to its primary
/// under `tls-replication yes`, as Redis's: the primary is checked
/// against `tls-ca-cert-file`/`-dir`; the replica shows
/// `tls-client-cert-file` (and key) if set, else `tls-cert-file`.
pub fn client_config(c: &Config) -> Result<rustls::ClientConfig, String> {
    let s = c.settings();
    let roots = load_roots(&s.tls_ca_cert_file, &s.tls_ca_cert_dir)?;
    let versions = protocols(&s.tls_protocols)?;
    let builder = rustls::ClientConfig::builder_with_provider(configured_provider(c)?)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?
        .with_root_certificates(roots);
    let (cert_file, key_file, pass) = if s.tls_client_cert_file.is_empty() {
        (&s.tls_cert_file, &s.tls_key_file, &s.tls_key_file_pass)
    } else {
        (
            &s.tls_client_cert_file,
            &s.tls_client_key_file,
            &s.tls_client_key_file_pass,
        )
    };
    if cert_file.is_empty() || key_file.is_empty() {
        return Ok(builder.with_no_client_auth());
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    let key = load_key(key_file, pass)?;
    builder
        .with_client_auth_cert(certs, key)
        .map_err(|e| format!("Private key does not match the certificate: {e}"))
}

/// The private key, decrypted with `tls-key-file-pass` when it is an
/// encrypted PKCS#8 key (`ENCRYPTED PRIVATE KEY`).
fn load_key(path: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("Failed to load private key: {path}: {e}");
    let text = std::fs::read_to_string(path).map_err(|e| fail(&e))?;
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        use pkcs8::der::pem::PemLabel;
        let (label, doc) = pkcs8::SecretDocument::from_pem(&text).map_err(|e| fail(&e))?;
        pkcs8::EncryptedPrivateKeyInfo::validate_pem_label(label).map_err(|e| fail(&e))?;
        let info: pkcs8::EncryptedPrivateKeyInfo = doc.decode_msg().map_err(|e| fail(&e))?;
        let plain = info
            .decrypt(pass.as_bytes())
            .map_err(|_| fail(&"bad password or unsupported encryption"))?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            plain.as_bytes().to_vec(),
        )));
    }
    PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| fail(&e))
}

/// Trusted roots for client certificates: a PEM file, and the PEM files
/// of a directory.
fn load_roots(file: &str, dir: &str) -> Result<RootCertStore, String> {
    if file.is_empty() && dir.is_empty() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let mut roots = RootCertStore::empty();
    let mut add_file = |path: &Path, strict: bool| -> Result<(), String> {
        let certs =
            CertificateDer::pem_file_iter(path).and_then(|it| it.collect::<Result<Vec<_>, _>>());
        match certs {
            Ok(certs) => {
                for cert in certs {
                    roots.add(cert).map_err(|e| {
                        format!("Failed to configure CA certificate(s) file/directory: {e}")
                    })?;
                }
                Ok(())
            }
            Err(e) if strict => Err(format!(
                "Failed to configure CA certificate(s) file/directory: {}: {e}",
                path.display()
            )),
            Err(_) => Ok(()),
        }
    };
    if !file.is_empty() {
        add_file(Path::new(file), true)?;
    }
    if !dir.is_empty() {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            format!("Failed to configure CA certificate(s) file/directory: {dir}: {e}")
        })?;
        for entry in entries.flatten() {
            if entry.path().is_file() {
                add_file(&entry.path(), false)?;
            }
        }
    }
    if roots.is_empty() {
        return Err("Failed to configure CA certificate(s) file/directory: no certificate".into());
    }
    Ok(roots)
}

/// `tls-protocols`: "TLSv1.2 TLSv1.3" (empty: both). TLS 1.0 and 1.1,
/// which Redis may still offer, are not implemented by rustls.
fn protocols(s: &str) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    if s.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut out = Vec::new();
    for p in s.split_whitespace() {
        match p.to_ascii_lowercase().as_str() {
            "tlsv1.2" => out.push(&rustls::version::TLS12),
            "tlsv1.3" => out.push(&rustls::version::TLS13),
            "tlsv1" | "tlsv1.1" => {}
            _ => return Err(format!("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'. ({p})")),
        }
    }
    if out.is_empty() {
        return Err("Failed to configure TLS: only TLSv1.2 and TLSv1.3 are available".into());
    }
    Ok(out)
}

/// OpenSSL's names of the TLS 1.2 suites rustls implements.
const TLS12_NAMES: &[(&str, &str)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// `tls-ciphers` (TLS 1.2, OpenSSL names separated by `:`) and
/// `tls-ciphersuites` (TLS 1.3, IANA names): the suites named that rustls
/// implements, in the order given; OpenSSL's keywords and exclusions
/// (`HIGH`, `!aNULL`) are skipped. Naming none that exists is an error,
/// as in OpenSSL.
fn restrict_ciphers(
    provider: &mut rustls::crypto::CryptoProvider,
    tls12: &str,
    tls13: &str,
) -> Result<(), String> {
    let all = provider.cipher_suites.clone();
    let pick = |list: &str,
                v13: bool|
     -> Result<Option<Vec<rustls::SupportedCipherSuite>>, String> {
        if list.trim().is_empty() {
            return Ok(None);
        }
        let mut out = Vec::new();
        for name in list.split(':').map(str::trim) {
            let iana = TLS12_NAMES
                .iter()
                .find(|(o, _)| o.eq_ignore_ascii_case(name))
                .map_or(name, |(_, i)| i);
            if let Some(s) = all.iter().find(|s| {
                s.tls13().is_some() == v13 && format!("{:?}", s.suite()).eq_ignore_ascii_case(iana)
            }) {
                out.push(*s);
            }
        }
        if out.is_empty() {
            return Err(format!(
                "Failed to configure {}: no cipher matches '{list}'",
                if v13 {
                    "tls-ciphersuites"
                } else {
                    "tls-ciphers"
                }
            ));
        }
        Ok(Some(out))
    };
    let s12 = pick(tls12, false)?;
    let s13 = pick(tls13, true)?;
    provider.cipher_suites = all
        .iter()
        .filter(|s| {
            let v13 = s.tls13().is_some();
            let chosen = if v13 { &s13 } else { &s12 };
            chosen
                .as_ref()
                .is_none_or(|c| c.iter().any(|x| x.suite() == s.suite()))
        })
        .copied()
        .collect();
    Ok(())
}

/// A server-side TLS connection over a tokio TCP socket.
pub struct TlsStream {
    io: TcpStream,
    tls: Box<ServerConnection>,
    /// Decrypted bytes waiting in `tls` (so a read fills, and zeroes, only
    /// as much of the caller's buffer as there is to give).
    plaintext: usize,
    /// The peer sent close_notify.
    peer_closed: bool,
}

/// `io::Read`/`io::Write` over a tokio socket's non-blocking calls, for
/// rustls's `read_tls`/`write_tls`.
struct Sync<'a>(&'a TcpStream);

impl Read for Sync<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Sync<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    /// rustls hands over every queued record at once: one system call
    /// sends them all.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsStream {
    /// Completes the handshake of a new connection.
    pub async fn accept(io: TcpStream, config: Arc<ServerConfig>) -> io::Result<TlsStream> {
        let tls = ServerConnection::new(config).map_err(tls_error)?;
        let mut s = TlsStream {
            io,
            tls: Box::new(tls),
            plaintext: 0,
            peer_closed: false,
        };
        std::future::poll_fn(|cx| s.poll_handshake(cx)).await?;
        Ok(s)
    }

    /// A connection moved from another worker.
    pub fn from_parts(io: TcpStream, mut tls: Box<ServerConnection>) -> TlsStream {
        // Nothing new to process: this only reports what is buffered.
        let state = tls.process_new_packets().ok();
        TlsStream {
            io,
            tls,
            plaintext: state.as_ref().map_or(0, |s| s.plaintext_bytes_to_read()),
            peer_closed: state.as_ref().is_some_and(|s| s.peer_has_closed()),
        }
    }

    /// The socket and the TLS state, to move to another worker.
    pub fn into_parts(self) -> (TcpStream, Box<ServerConnection>) {
        (self.io, self.tls)
    }

    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            match self.poll_flush_tls(cx) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
            if !self.tls.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            match self.poll_read_tls(cx) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Reads TLS records from the socket and processes them. An invalid
    /// record is answered with an alert (queued for the next flush).
    fn poll_read_tls(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            match self.tls.read_tls(&mut Sync(&self.io)) {
                Ok(n) => {
                    match self.tls.process_new_packets() {
                        Ok(state) => {
                            self.plaintext = state.plaintext_bytes_to_read();
                            self.peer_closed = state.peer_has_closed();
                        }
                        Err(e) => {
                            // Send the alert rustls queued, best effort.
                            let _ = self.tls.write_tls(&mut Sync(&self.io));
                            return Poll::Ready(Err(tls_error(e)));
                        }
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    match self.io.poll_read_ready(cx) {
                        Poll::Ready(Ok(())) => continue,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => return Poll::Pending,
                    }
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Writes every queued TLS record to the socket.
    fn poll_flush_tls(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut Sync(&self.io)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    match self.io.poll_write_ready(cx) {
                        Poll::Ready(Ok(())) => continue,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => return Poll::Pending,
                    }
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.plaintext > 0 {
                let n = this.plaintext.min(buf.remaining());
                let got = this.tls.reader().read(buf.initialize_unfilled_to(n))?;
                buf.advance(got);
                this.plaintext -= got;
                return Poll::Ready(Ok(()));
            }
            // close_notify: a clean end.
            if this.peer_closed {
                return Poll::Ready(Ok(()));
            }
            // An alert or handshake message may need an answer first.
            if let Poll::Ready(Err(e)) = this.poll_flush_tls(cx) {
                return Poll::Ready(Err(e));
            }
            match this.poll_read_tls(cx) {
                // The socket closed (with or without close_notify): the
                // end of the stream, as for a plain socket.
                Poll::Ready(Ok(0)) if this.plaintext == 0 => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            // rustls takes what fits in its (bounded) buffer of records.
            let n = this.tls.writer().write(buf)?;
            if n > 0 || buf.is_empty() {
                // Start sending now; what does not fit waits for flush.
                let _ = this.poll_flush_tls(cx)?;
                return Poll::Ready(Ok(n));
            }
            match this.poll_flush_tls(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_flush_tls(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.tls.send_close_notify();
        match this.poll_flush_tls(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.io).poll_shutdown(cx),
            other => other,
        }
    }
}
