// One Quartz 2.3 scheduler instance of a JDBC cluster (PostgreSQL), for leaselog's Quartz lab.
//
// java QuartzLab INSTANCE_ID JDBC_URL TRUTH_FILE [schedule]
//
// The job (`DEFAULT.report`) is @DisallowConcurrentExecution and requestsRecovery; it logs its own start
// and end (leaselog's vocabulary, key=value pairs in the slf4j-simple console layout) and appends each
// execution's start and end (the wall clock in epoch milliseconds, read right before its line) to TRUTH_FILE. With `schedule`,
// the instance schedules the job to fire once, three seconds from now (the cluster picks who runs it).
import java.io.FileWriter;
import java.io.IOException;
import java.util.Date;
import java.util.Properties;

import org.quartz.DisallowConcurrentExecution;
import org.quartz.Job;
import org.quartz.JobBuilder;
import org.quartz.JobDetail;
import org.quartz.JobExecutionContext;
import org.quartz.JobKey;
import org.quartz.Scheduler;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.impl.StdSchedulerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class QuartzLab {
    static String instance;
    static String truthFile;

    static synchronized void truth(String line) {
        try (FileWriter w = new FileWriter(truthFile, true)) {
            w.write(line + "\n");
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    @DisallowConcurrentExecution
    public static class ReportJob implements Job {
        private static final Logger log = LoggerFactory.getLogger("com.example.report.ReportJob");

        public void execute(JobExecutionContext context) {
            String key = context.getJobDetail().getKey().toString();
            long started = System.currentTimeMillis();
            log.info("event=job_started jobId=" + key + " instance=" + instance);
            truth("{\"instance\":\"" + instance + "\",\"what\":\"start\",\"at\":" + started
                    + ",\"recovering\":" + context.isRecovering() + ",\"trigger\":\""
                    + context.getTrigger().getKey() + "\"}");
            // 40 steps of 100 ms: a pause of the process leaves the steps after it still to do
            for (int i = 0; i < 40; i++) {
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            long ended = System.currentTimeMillis();
            log.info("event=job_finished jobId=" + key + " instance=" + instance + " status=ok");
            truth("{\"instance\":\"" + instance + "\",\"what\":\"end\",\"at\":" + ended + "}");
        }
    }

    public static void main(String[] args) throws Exception {
        instance = args[0];
        truthFile = args[2];
        Properties p = new Properties();
        p.setProperty("org.quartz.scheduler.instanceName", "ReportScheduler");
        p.setProperty("org.quartz.scheduler.instanceId", instance);
        p.setProperty("org.quartz.threadPool.class", "org.quartz.simpl.SimpleThreadPool");
        p.setProperty("org.quartz.threadPool.threadCount", "2");
        p.setProperty("org.quartz.jobStore.class", "org.quartz.impl.jdbcjobstore.JobStoreTX");
        p.setProperty("org.quartz.jobStore.driverDelegateClass", "org.quartz.impl.jdbcjobstore.PostgreSQLDelegate");
        p.setProperty("org.quartz.jobStore.isClustered", "true");
        p.setProperty("org.quartz.jobStore.clusterCheckinInterval", "1000");
        p.setProperty("org.quartz.jobStore.dataSource", "lab");
        p.setProperty("org.quartz.dataSource.lab.driver", "org.postgresql.Driver");
        p.setProperty("org.quartz.dataSource.lab.URL", args[1]);
        p.setProperty("org.quartz.dataSource.lab.user", "postgres");
        p.setProperty("org.quartz.dataSource.lab.password", "");
        p.setProperty("org.quartz.dataSource.lab.maxConnections", "4");
        // HikariCP logs through slf4j (c3p0 0.9.1.2, the default provider, through java.util.logging)
        p.setProperty("org.quartz.dataSource.lab.provider", "hikaricp");
        p.setProperty("org.quartz.scheduler.idleWaitTime", "1000");
        Scheduler scheduler = new StdSchedulerFactory(p).getScheduler();
        if (args.length > 3 && args[3].equals("schedule")) {
            JobDetail job = JobBuilder.newJob(ReportJob.class).withIdentity("report").requestRecovery(true)
                    .storeDurably().build();
            Trigger trigger = TriggerBuilder.newTrigger().withIdentity("report-once").forJob(job)
                    .startAt(new Date(System.currentTimeMillis() + 3000)).build();
            scheduler.addJob(job, true);
            scheduler.scheduleJob(trigger);
        }
        scheduler.start();
        truth("{\"instance\":\"" + instance + "\",\"what\":\"ready\",\"at\":" + System.currentTimeMillis() + "}");
        Thread.sleep(Long.MAX_VALUE);
    }
}
