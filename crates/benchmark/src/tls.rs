//! TLS for every connection (`--tls`, redis-benchmark's options): rustls
//! with the `ring` provider.
//!
//! - trust: `--cacert FILE` and/or `--cacertdir DIR` (PEM), else the
//!   system's CA directory (`/etc/ssl/certs`), as OpenSSL's default paths;
//!   `--insecure` skips verifying the server's certificate;
//! - `--cert`/`--key`: a client certificate (servers with
//!   `tls-auth-clients yes`);
//! - `--sni NAME`: the name sent and verified (default: the host);
//! - `--tls-ciphers`/`--tls-ciphersuites` are OpenSSL cipher lists: rustls
//!   has its own fixed set of safe suites, so they are reported as ignored.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::cli::TlsOptions;

/// The TLS settings of this run, set once by [`configure`] before any
/// connection is opened (every connection, benchmark or control, uses it).
static CLIENT: OnceLock<(Arc<ClientConfig>, Option<String>)> = OnceLock::new();

/// Builds the client configuration from the options. Returns the warnings
/// to print (ignored OpenSSL-only options).
pub fn configure(opts: &TlsOptions) -> Result<Vec<String>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS: protocol versions")?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
    } else {
        builder.with_root_certificates(roots(opts)?)
    };
    let config = match (&opts.cert, &opts.key) {
        (Some(cert), Some(key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| anyhow!("TLS: cannot read certificate {cert}: {e}"))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| anyhow!("TLS: cannot read private key {key}: {e}"))?;
            builder
                .with_client_auth_cert(certs, key)
                .context("TLS: client certificate")?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => bail!("TLS: --cert and --key go together"),
    };
    let _ = CLIENT.set((Arc::new(config), opts.sni.clone()));
    let mut warnings = Vec::new();
    if opts.ciphers.is_some() || opts.ciphersuites.is_some() {
        warnings.push(
            "--tls-ciphers/--tls-ciphersuites ignored: keel-benchmark's TLS (rustls) \
             negotiates its own set of safe cipher suites"
                .to_string(),
        );
    }
    Ok(warnings)
}

/// Whether [`configure`] ran: connections are then TLS.
pub fn enabled() -> bool {
    CLIENT.get().is_some()
}

fn roots(opts: &TlsOptions) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    let mut add_file = |path: &Path, strict: bool| -> Result<()> {
        let certs = match CertificateDer::pem_file_iter(path) {
            Ok(i) => i.collect::<Result<Vec<_>, _>>(),
            Err(e) => Err(e),
        };
        match certs {
            Ok(certs) => {
                for c in certs {
                    if let Err(e) = store.add(c) {
                        if strict {
                            bail!("TLS: bad CA certificate in {}: {e}", path.display());
                        }
                    }
                }
                Ok(())
            }
            Err(e) if strict => bail!("TLS: cannot read CA file {}: {e}", path.display()),
            Err(_) => Ok(()),
        }
    };
    if let Some(f) = &opts.cacert {
        add_file(Path::new(f), true)?;
    }
    let dir = match (&opts.cacert, &opts.cacertdir) {
        (_, Some(d)) => Some(d.clone()),
        (None, None) => Some("/etc/ssl/certs".to_string()),
        (Some(_), None) => None,
    };
    if let Some(d) = dir {
        let entries =
            std::fs::read_dir(&d).map_err(|e| anyhow!("TLS: cannot read CA directory {d}: {e}"))?;
        for e in entries.flatten() {
            let p = e.path();
            if p.is_file() {
                add_file(&p, false)?;
            }
        }
    }
    if store.is_empty() {
        bail!("TLS: no CA certificate to verify the server with (--cacert, --cacertdir or --insecure)");
    }
    Ok(store)
}

/// A TLS connection over a TCP socket that the engine later drives
/// non-blocking.
pub struct TlsStream {
    conn: ClientConnection,
    sock: TcpStream,
}

impl TlsStream {
    /// Runs the handshake on the (still blocking) socket.
    pub fn connect(sock: TcpStream, host: &str) -> io::Result<TlsStream> {
        let Some((config, sni)) = CLIENT.get() else {
            return Err(io::Error::other("TLS is not configured"));
        };
        let name = sni.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: {e}")))?;
        let conn = ClientConnection::new(config.clone(), server_name).map_err(io::Error::other)?;
        let mut s = TlsStream { conn, sock };
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock)?;
        }
        Ok(s)
    }

    pub fn socket(&self) -> &TcpStream {
        &self.sock
    }

    /// Decrypted bytes: what rustls holds, else reads one batch of
    /// records from the socket (WouldBlock when there is none yet, 0 at
    /// the end of the stream).
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if self.conn.read_tls(&mut self.sock)? == 0 {
                return Ok(0);
            }
            self.conn
                .process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            self.flush()?;
        }
    }

    /// Encrypts all of `buf` and sends it. The engine treats a write as
    /// done once accepted, so the records are pushed out here even on a
    /// non-blocking socket, waiting for it to drain if it is full (rare
    /// on the loopback; a plaintext socket reports WouldBlock instead).
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.conn.writer().write(buf)?;
        self.flush()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_writable(&self.sock)?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn wait_writable(sock: &TcpStream) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the duration of the call.
    let r = unsafe { libc::poll(&mut pfd, 1, 1000) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `--insecure`: any server certificate is accepted (signatures on the
/// handshake are still checked, so the session keys are the server's).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
