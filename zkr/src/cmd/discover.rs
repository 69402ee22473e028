//! `zkr discover register|list|names`: curator-x-discovery's registry from the shell.

use serde_json::Value;
use zk_recipes::{Framework, ServiceDiscovery, ServiceInstance};

use super::group::{keep, segment, LEAVE_TIMEOUT};
use crate::args::{OnLost, Supervision};
use crate::exit::{self, CliError, CliResult};
use crate::output;
use crate::registry_args::{DiscoverArgs, DiscoverOp, RegisterArgs};
use crate::Ctx;

/// What can be refused before connecting: paths, names, ids, ports, the payload.
pub fn check(args: &DiscoverArgs) -> CliResult<()> {
    match &args.op {
        DiscoverOp::Register(a) => {
            super::recipe_path(&a.base)?;
            instance(a).map(drop)
        }
        DiscoverOp::List(a) => {
            super::recipe_path(&a.base)?;
            segment("NAME", &a.name)
        }
        DiscoverOp::Names(a) => super::recipe_path(&a.base),
    }
}

/// The instance `register` registers.
fn instance(a: &RegisterArgs) -> CliResult<ServiceInstance<Value>> {
    segment("NAME", &a.name)?;
    let mut builder = ServiceInstance::builder(&a.name).address(&a.address).port(a.port.into());
    if let Some(id) = &a.id {
        segment("--id", id)?;
        builder = builder.id(id);
    }
    if let Some(port) = a.ssl_port {
        builder = builder.ssl_port(port.into());
    }
    if let Some(json) = &a.payload {
        let payload: Value =
            serde_json::from_str(json).map_err(|e| CliError::usage(format!("--payload is not JSON: {e}")))?;
        builder = builder.payload(payload);
    }
    Ok(builder.build()?)
}

pub async fn discover(fw: &Framework, args: DiscoverArgs, ctx: &mut Ctx) -> CliResult {
    match args.op {
        DiscoverOp::Register(a) => register(fw, a, ctx).await,
        DiscoverOp::List(a) => {
            let d = ServiceDiscovery::<Value>::new(fw, &a.base)?;
            for i in d.query_for_instances(&a.name).await? {
                let line = if ctx.global.json {
                    String::from_utf8_lossy(&i.to_json()?).into_owned()
                } else {
                    let port = i.port.map_or("-".to_string(), |p| p.to_string());
                    format!("{} {} {port}", i.id, i.address.as_deref().unwrap_or("-"))
                };
                output::line(&line);
            }
            Ok(exit::OK)
        }
        DiscoverOp::Names(a) => {
            for name in ServiceDiscovery::<Value>::new(fw, &a.base)?.query_for_names().await? {
                output::line(&name);
            }
            Ok(exit::OK)
        }
    }
}

async fn register(fw: &Framework, args: RegisterArgs, ctx: &mut Ctx) -> CliResult {
    let instance = instance(&args)?;
    let d = ServiceDiscovery::<Value>::new(fw, &args.base)?;
    let registered = ctx.signals.interruptible(d.register(&instance)).await;
    let path = match registered.and_then(|r| r.map_err(CliError::from)) {
        Ok(path) => path,
        Err(e) => {
            let _ = tokio::time::timeout(LEAVE_TIMEOUT, d.close()).await;
            return Err(e);
        }
    };
    output::line(&format!("registered {} {}", instance.name, instance.id));
    // re-registered after any loss by the library; never "lost" for CMD
    let supervision = Supervision { on_lost: OnLost::Ignore, kill_after: std::time::Duration::ZERO };
    let env = [("ZK_INSTANCE_PATH", path), ("ZK_INSTANCE_ID", instance.id.clone())];
    let code = keep(ctx, "registration", &args.cmd, &env, std::future::pending(), &supervision).await;
    if tokio::time::timeout(LEAVE_TIMEOUT, d.close()).await.is_err() {
        eprintln!("zkr: unregistering timed out (the session's end removes the instance)");
    }
    code
}
