use anyhow::Context;
use reveal_exporter::{cli, metrics_doc, runner::Runner, server, web};
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    let cli = match cli::parse_from(std::env::args_os()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if cli.flags.print_metrics {
        print!("{}", metrics_doc::markdown());
        return Ok(());
    }
    let format = cli.flags.log_format.parse().map_err(anyhow::Error::msg)?;
    reveal_schema::logging::init(&cli.flags.log_level, format);
    if let (Some(sel), Some(path)) = (&cli.settings.selection, &cli.flags.selection) {
        if let Some(warning) = sel.unknown_warning() {
            tracing::warn!(file = %path.display(), "{warning}");
        }
    }
    let runner = Arc::new(Runner::new(&cli.collectors, &cli.settings).map_err(anyhow::Error::msg)?);
    if let Some(fast) = &cli.fast {
        if let (Some(warning), Some(path)) = (fast.unknown_warning(), &cli.flags.fast) {
            tracing::warn!(file = %path.display(), "{warning}");
        }
        runner.set_fast(fast);
    }
    if cli.flags.once {
        print!(
            "{}",
            runner.render_as(reveal_exporter::runner::Format::Text)
        );
        return Ok(());
    }
    let listens = cli
        .flags
        .listen_address
        .iter()
        .map(|a| server::parse_listen_address(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    // A web configuration that cannot be used is a reason not to start, never to serve with
    // less protection than it asks for.
    let web = match &cli.flags.web_config_file {
        Some(p) => Some(Arc::new(web::Web::load(p).map_err(anyhow::Error::msg)?)),
        None => None,
    };
    // One thread serves HTTP and renders a lone scrape inline (`Server::render`): a scrape
    // handed to another thread costs two cross-thread wake-ups, which on an idle VM were
    // about 15 % of a scrape's CPU at 100 ms scraping. Blocking threads render when many
    // scrapers are busy.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let mut listeners = Vec::new();
        for (listen, flag) in listens.into_iter().zip(&cli.flags.listen_address) {
            let l = server::bind(listen).with_context(|| format!("listening on {flag}"))?;
            listeners.push(tokio::net::TcpListener::from_std(l)?);
        }
        let bound = listeners
            .iter()
            .map(|l| l.local_addr().map(|a| a.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        // Tests and operators read the ports (port 0) from this line: every address, ", "
        // between them.
        tracing::info!(
            version = %reveal_schema::build::long_version(),
            collectors = %runner.names().join(","),
            "listening on {}",
            bound.join(", ")
        );
        let srv = Arc::new(server::Server {
            runner,
            telemetry_path: cli.flags.telemetry_path.clone(),
            limit: Arc::new(tokio::sync::Semaphore::new(cli.flags.max_requests.max(1))),
            web: web.clone(),
            max_connections: cli.flags.max_connections,
            rendering: Default::default(),
            last_render: Default::default(),
        });
        if let Some(w) = web {
            tokio::spawn(reload_on_sighup(w));
        }
        let mut serving = tokio::task::JoinSet::new();
        for l in listeners {
            serving.spawn(srv.clone().serve(l));
        }
        tokio::select! {
            Some(r) = serving.join_next() => r.context("serving HTTP")?.context("serving HTTP"),
            _ = shutdown() => { tracing::info!("shutting down"); Ok(()) }
        }
    })
}

/// Reads the web configuration again on each SIGHUP (it is also read again whenever a file
/// of it changes).
async fn reload_on_sighup(web: Arc<web::Web>) {
    let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
        tracing::warn!(
            "cannot listen for SIGHUP; the web configuration is still read again when it changes"
        );
        return;
    };
    while hup.recv().await.is_some() {
        if web.reload().is_ok() {
            tracing::info!("SIGHUP: web configuration read again");
        }
    }
}

async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("the runtime enables signals (enable_all), so SIGTERM can be registered");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
