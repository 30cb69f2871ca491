//! `CollectorActor`: runs one dataset's collector inside the supervisor's actor system and
//! reports the dataset ([`DatasetFinished`]) to the supervisor when it is done.
//!
//! The actor does not block its thread: the collector is an async task spawned on the
//! actor's context, and every AWS request in it awaits admission through the gate (the
//! quota actors answer over their own mailboxes). Cancellation reaches it through the
//! scan's token in the call context, not through a message: a cancelled call returns at
//! once, whether it was queued for admission or in flight.

use actix::fut::wrap_future;
use actix::{Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Message, Recipient};

use crate::dataset::Dataset;
use crate::output::DatasetReport;
use crate::{collect, CollectorRun};
use tollgate_engine::aws::ScanId;

/// A collector finished its dataset: the message a [`CollectorActor`] sends whoever
/// started it (the scan crate's supervisor).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct DatasetFinished {
    /// The scan.
    pub scan_id: ScanId,
    /// The dataset.
    pub dataset: Dataset,
    /// Its report.
    pub report: DatasetReport,
}

/// One dataset's collector for one scan.
pub struct CollectorActor {
    scan_id: ScanId,
    dataset: Dataset,
    run: Option<CollectorRun>,
    supervisor: Recipient<DatasetFinished>,
}

impl CollectorActor {
    /// A collector for `dataset`, reporting to `supervisor`.
    pub fn new(
        scan_id: ScanId,
        dataset: Dataset,
        run: CollectorRun,
        supervisor: Recipient<DatasetFinished>,
    ) -> Self {
        CollectorActor {
            scan_id,
            dataset,
            run: Some(run),
            supervisor,
        }
    }
}

impl Actor for CollectorActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let Some(run) = self.run.take() else {
            ctx.stop();
            return;
        };
        let dataset = self.dataset;
        let work = async move {
            let report = collect(dataset, &run).await;
            run.progress.finish(report.status);
            report
        };
        ctx.spawn(wrap_future::<_, Self>(work).map(|report, act, ctx| {
            act.supervisor.do_send(DatasetFinished {
                scan_id: act.scan_id,
                dataset: act.dataset,
                report,
            });
            ctx.stop();
        }));
    }
}
