import { main } from '../../bin/process.js';
import { widgetAssetsService } from './index.js';

await main({ name: 'widget-assets', services: [widgetAssetsService], workers: [] });
